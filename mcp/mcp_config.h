/*
 * mcp_config.h - `dolsot mcp --print-config HOST`: the snippet an agent host
 * needs to start this binary as its MCP server (command, arguments and the
 * DOLSOT_* environment in force), in the host's own format.
 */
#ifndef DOLSOT_MCP_CONFIG_H
#define DOLSOT_MCP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The hosts, as --print-config names them. */
#define MCP_CONFIG_HOSTS "claude, codex or generic"

/* What the snippet is made of. */
struct mcp_config_in {
	const char *host;        /* as --print-config names it */
	const char *const *args; /* the server's arguments after "mcp" */
	size_t n;
	const char *ns;          /* the namespace the server's sessions are in */
	bool toolboxes;          /* --toolbox given: this directory goes on PYTHONPATH */
};

/*
 * Print the snippet for in->host: the command is this binary, its
 * arguments "mcp" then in->args; its environment the DOLSOT_* settings in
 * force, DOLSOT_NAMESPACE, and what makes the toolboxes importable there as
 * here: PYTHONPATH (its entries made absolute, the current directory first
 * when toolboxes are given) and VIRTUAL_ENV.  Returns 0; 1 when the host is
 * unknown; -1 with a reason in err when the binary's path or the output
 * failed.
 */
int mcp_print_config(const struct mcp_config_in *in, FILE *out, char *err, size_t errlen);

#endif
