/*
 * mcp_config.c - the host configuration snippets: JSON for Claude (Desktop's
 * claude_desktop_config.json and Code's .mcp.json share "mcpServers") and
 * for a generic host, TOML for Codex (~/.codex/config.toml).
 */
#include "mcp_config.h"

#include <errno.h>
#include <stdio.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

extern char **environ;

/* The DOLSOT_* settings of this environment (the variables of options.h's
 * table), so the host's server gets the store and defaults this shell
 * has. */
static json_t *env_object(void)
{
	json_t *env = json_object();

	for (char **e = environ; env && e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];

		if (strncmp(*e, "DOLSOT_", 7) != 0 || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		memcpy(name, *e, (size_t)(eq - *e));
		name[eq - *e] = '\0';
		if (!options_by_env(name))
			continue;
		/* A value that is not UTF-8 cannot go in JSON or TOML: left out. */
		json_object_set_new(env, name, json_string(eq + 1));
	}
	return env;
}

/* path made absolute against cwd, appended to the PYTHONPATH being built
 * in *pp (malloc'd); false when out of memory. */
static bool path_add(char **pp, const char *cwd, const char *path, size_t len)
{
	char *grown = NULL;
	int n;

	if (len == 0)
		return true;   /* an empty entry: none */
	n = asprintf(&grown, "%s%s%s%s%.*s", *pp ? *pp : "", *pp ? ":" : "",
	             path[0] == '/' ? "" : cwd, path[0] == '/' ? "" : "/", (int)len, path);
	if (n < 0)
		return false;
	free(*pp);
	*pp = grown;
	return true;
}

/* PYTHONPATH for the host's server: this directory when toolboxes are
 * given (the worker imports from its current directory, which the host
 * chooses), then this environment's entries, each made absolute.  NULL:
 * none (or out of memory: the snippet then goes without). */
static char *python_path(bool toolboxes)
{
	const char *pp = getenv("PYTHONPATH");
	char cwd[PATH_MAX], *out = NULL;

	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if (toolboxes && !path_add(&out, cwd, cwd, strlen(cwd)))
		return NULL;
	for (const char *p = pp; p && *p;) {
		size_t len = strcspn(p, ":");

		if (!path_add(&out, cwd, p, len)) {
			free(out);
			return NULL;
		}
		p += len + (p[len] == ':');
	}
	return out;
}

static json_t *server_object(const char *cmd, const struct mcp_config_in *in)
{
	json_t *a = json_array(), *env = env_object(), *o;
	const char *venv = getenv("VIRTUAL_ENV");
	char *pp = python_path(in->toolboxes);

	json_array_append_new(a, json_string("mcp"));
	for (size_t i = 0; i < in->n; i++)
		json_array_append_new(a, json_string(in->args[i]));
	if (env && in->ns)
		json_object_set_new(env, "DOLSOT_NAMESPACE", json_string(in->ns));
	if (env && pp)
		json_object_set_new(env, "PYTHONPATH", json_string(pp));
	if (env && venv && *venv)
		json_object_set_new(env, "VIRTUAL_ENV", json_string(venv));
	free(pp);
	o = json_pack("{s:s, s:o, s:o}", "command", cmd, "args", a, "env", env);
	return o;
}

/* s as a TOML basic string. */
static void toml_string(const char *s, FILE *out)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void print_toml(const json_t *server, FILE *out)
{
	const json_t *args = json_object_get(server, "args");
	const char *k;
	json_t *v;
	size_t i;

	fputs("[mcp_servers.dolsot]\ncommand = ", out);
	toml_string(json_string_value(json_object_get(server, "command")), out);
	fputs("\nargs = [", out);
	json_array_foreach(args, i, v) {
		if (i)
			fputs(", ", out);
		toml_string(json_string_value(v), out);
	}
	fputs("]\n", out);
	if (json_object_size(json_object_get(server, "env"))) {
		fputs("\n[mcp_servers.dolsot.env]\n", out);
		json_object_foreach(json_object_get(server, "env"), k, v) {
			fprintf(out, "%s = ", k);
			toml_string(json_string_value(v), out);
			fputc('\n', out);
		}
	}
}

int mcp_print_config(const struct mcp_config_in *in, FILE *out, char *err, size_t errlen)
{
	const char *host = in->host;
	char self[PATH_MAX];
	ssize_t len;
	json_t *server, *doc = NULL;
	int rc = 0;

	if (strcmp(host, "claude") != 0 && strcmp(host, "codex") != 0 &&
	    strcmp(host, "generic") != 0)
		return 1;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		snprintf(err, errlen, "cannot find this binary's path (/proc/self/exe): %s",
		         strerror(errno));
		return -1;
	}
	self[len] = '\0';
	server = server_object(self, in);
	if (!server) {
		snprintf(err, errlen, "out of memory, or an argument that is not UTF-8");
		return -1;
	}
	if (strcmp(host, "codex") == 0) {
		print_toml(server, out);
	} else {
		doc = strcmp(host, "claude") == 0
		      ? json_pack("{s:{s:O}}", "mcpServers", "dolsot", server) : json_incref(server);
		if (!doc || json_dumpf(doc, out, JSON_INDENT(2)) < 0 || fputc('\n', out) == EOF)
			rc = -1;
		json_decref(doc);
	}
	json_decref(server);
	if (fflush(out) == EOF || ferror(out))
		rc = -1;
	if (rc < 0)
		snprintf(err, errlen, "cannot write the configuration: %s", strerror(errno));
	return rc;
}
