/*
 * mhd.h - libmicrohttpd, loaded when `dolsot mcp --http` starts.
 *
 * Debian's libmicrohttpd brings GnuTLS and nine more shared libraries;
 * linked into the binary, every CLI call paid for loading them (1.4 ms of
 * a 5 ms call).  So http.c calls it through this table, which mhd_load()
 * fills from the shared library at the start of the one command that
 * serves HTTP; its types and constants still come from the header.
 */
#ifndef DOLSOT_MHD_H
#define DOLSOT_MHD_H

#include <stddef.h>
#include <sys/socket.h>
#include <microhttpd.h>

struct mhd_api {
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_run) run;
	__typeof__(&MHD_get_timeout) get_timeout;
	__typeof__(&MHD_get_daemon_info) get_daemon_info;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_lookup_connection_value) lookup_connection_value;
	__typeof__(&MHD_suspend_connection) suspend_connection;
	__typeof__(&MHD_resume_connection) resume_connection;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_create_response_from_callback) create_response_from_callback;
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_destroy_response) destroy_response;
};

/* Filled by mhd_load(). */
extern struct mhd_api mhd;

/* Load the library (once) and fill mhd: 0, or -1 with why in err. */
int mhd_load(char *err, size_t errlen);

#endif
