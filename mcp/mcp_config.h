/*
 * mcp_config.h - `dolsot mcp --print-config HOST`: the snippet an agent host
 * needs to start this binary as its MCP server (command, arguments and the
 * DOLSOT_* environment in force), in the host's own format.
 */
#ifndef DOLSOT_MCP_CONFIG_H
#define DOLSOT_MCP_CONFIG_H

#include <stddef.h>
#include <stdio.h>

/* The hosts, as --print-config names them. */
#define MCP_CONFIG_HOSTS "claude, codex or generic"

/*
 * Print the snippet for host: the command is this binary, its arguments
 * "mcp" then args[0..n).  Returns 0; 1 when host is unknown; -1 with a
 * reason in err when the binary's path or the output failed.
 */
int mcp_print_config(const char *host, const char *const *args, size_t n, FILE *out,
                     char *err, size_t errlen);

#endif
