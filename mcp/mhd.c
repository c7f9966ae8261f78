/*
 * mhd.c - libmicrohttpd loaded at run time (mhd.h).
 */
#include "mhd.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define MHD_SONAME "libmicrohttpd.so.12"

struct mhd_api mhd;

#define SYM(field) { "MHD_" #field, offsetof(struct mhd_api, field) }

static const struct {
	const char *name;
	size_t at;
} syms[] = {
	SYM(start_daemon), SYM(stop_daemon), SYM(run), SYM(get_timeout),
	SYM(get_daemon_info), SYM(get_connection_info), SYM(lookup_connection_value),
	SYM(suspend_connection), SYM(resume_connection), SYM(create_response_from_buffer),
	SYM(create_response_from_callback), SYM(add_response_header), SYM(queue_response),
	SYM(destroy_response),
};

int mhd_load(char *err, size_t errlen)
{
	struct mhd_api got;
	void *lib;

	if (mhd.start_daemon)
		return 0;
	lib = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(err, errlen, "cannot load %s (Debian's libmicrohttpd12 package): %s",
		         MHD_SONAME, dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(*syms); i++) {
		void *fn = dlsym(lib, syms[i].name);

		if (!fn) {
			snprintf(err, errlen, "%s has no %s: %s", MHD_SONAME, syms[i].name, dlerror());
			dlclose(lib);
			return -1;
		}
		memcpy((char *)&got + syms[i].at, &fn, sizeof(fn));
	}
	mhd = got;
	return 0;
}
