/*
 * check_proxy.c - `dolsot mcp --proxy` (issue 37) between two real SDK
 * peers: tests/lib/mcp_proxy_client.mjs attaches dolsot, answering
 * sampling, and dolsot proxies two tests/lib/mcp_proxy_server.mjs (the
 * SDK's McpServer) beside a --tool: proxied tools, the helper and
 * llm_query in one cell, names prefixed on a clash, errors, a hanging
 * tool and model (TimeoutError), a dying server, an undeclared tool, the
 * type gate, a client without sampling; a sandboxed cell; and the
 * server's start refused when a proxied server does not start or its
 * names are all taken.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "cli_check.h"
#include "cli_helpers.h"

static struct cli_test fx;

static void setup(void)
{
	cli_test_begin_usual(&fx);
}

static void teardown(void)
{
	cli_test_end(&fx);
}

static bool sdk_present(void)
{
	struct stat st;

	if (access("/usr/bin/node", X_OK) == 0 &&
	    stat("tools/node/node_modules/@modelcontextprotocol/sdk/package.json", &st) == 0)
		return true;
	printf("SKIP: node or tools/node's @modelcontextprotocol/sdk is missing "
	       "(tools/npm-deps.sh installs it)\n");
	return false;
}

START_TEST(sdk_peers_on_both_sides)
{
	struct cli_run r;
	bool gate = access("/usr/bin/mypy", X_OK) == 0;

	if (!sdk_present())
		return;
	if (gate) {
		cli_test_add_env(&fx, "DOLSOT_TYPECHECK=1");
		cli_test_add_env(&fx, "DOLSOT_TY_BIN=/usr/bin/mypy");
	}
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .prog = "/usr/bin/node", .timeout = 300 },
	        (const char *const[]){ "node", "tests/lib/mcp_proxy_client.mjs", cli_bin(),
	                               gate ? "typegate" : "", NULL });
	ck_assert_msg(r.code == 0 && cli_has(r.out, "ok no sampling, no llm_query\n"),
	              "exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err);
	cli_run_release(&r);
}
END_TEST

START_TEST(a_server_that_does_not_start_stops_dolsot_mcp)
{
	struct cli_run r;

	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "" },
	        (const char *const[]){ "dolsot", "mcp", "--proxy", "exit 5", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "--proxy 'exit 5': initialize: ");
	cli_run_release(&r);
	if (!sdk_present())
		return;
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = "" },
	        (const char *const[]){ "dolsot", "mcp", "--tool", "add=true", "--tool",
	                               "alpha_add=true", "--proxy",
	                               "node tests/lib/mcp_proxy_server.mjs alpha", NULL });
	ck_code(&r, 1);
	ck_err_has(&r, "tool 'add' is named 'add' and 'alpha_add' in cells, both taken");
	cli_run_release(&r);
}
END_TEST

/* A sandboxed cell reaches the proxied server through its channel. */
START_TEST(a_sandboxed_cell_calls_proxied_tools)
{
	struct cli_run r;
	static const char input[] =
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
		"{\"name\":\"raw\",\"version\":\"1\"}}}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"python\",\"arguments\":{\"code\":\"add(1, b=2)['sum'] + 1\","
		"\"session\":\"sb\"}}}\n";

	if (!sdk_present())
		return;
	cli_run(&r, &(struct cli_opts){ .env = fx.env, .stdin_data = input },
	        (const char *const[]){ "dolsot", "mcp", "--sandbox", "--proxy", "--", "node",
	                               "tests/lib/mcp_proxy_server.mjs", NULL });
	ck_code(&r, 0);
	ck_out_has(&r, "\"value\":\"4\"");
	cli_run_release(&r);
}
END_TEST

START_TEST(proxy_belongs_to_dolsot_mcp)
{
	struct cli_run r;

	CLI(&r, "mcp", "--proxy", "node server.mjs a", "--print-config", "generic");
	ck_code(&r, 0);
	ck_out_has(&r, "    \"mcp\",\n    \"--proxy\",\n    \"node server.mjs a\"\n  ]");
	cli_run_release(&r);

	CLI(&r, "mcp", "--timeout", "9", "--proxy", "--");
	ck_code(&r, 2);
	ck_err_has(&r, "--proxy --: expected a command after '--'");
	cli_run_release(&r);
	CLI(&r, "--session", "s", "--proxy", "true", "1");
	ck_code(&r, 2);
	ck_err_has(&r, "--proxy belongs to dolsot mcp");
	cli_run_release(&r);
}
END_TEST

static Suite *proxy_suite(void)
{
	Suite *s = suite_create("proxy");
	TCase *sdk = tcase_create("sdk"), *start = tcase_create("start");

	tcase_add_checked_fixture(sdk, setup, teardown);
	tcase_add_checked_fixture(start, setup, teardown);
	tcase_set_timeout(sdk, 320);
	tcase_set_timeout(start, 60);
	suite_add_tcase(s, sdk);
	suite_add_tcase(s, start);
	tcase_add_test(sdk, sdk_peers_on_both_sides);
	tcase_add_test(start, a_server_that_does_not_start_stops_dolsot_mcp);
	tcase_add_test(start, proxy_belongs_to_dolsot_mcp);
	tcase_add_test(start, a_sandboxed_cell_calls_proxied_tools);
	return s;
}

int main(void)
{
	return ck_run(proxy_suite());
}
