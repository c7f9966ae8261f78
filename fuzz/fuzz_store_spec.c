/*
 * fuzz_store_spec.c - libFuzzer harness for DOLSOT_STORE's parser
 * (store_spec.c): the caller's text, a Redis URL or a helper's command.
 *
 * Whatever parses must be in range (host, port, database; a helper's argv
 * non-empty words without blanks), and the name used in messages (built
 * from host, port and database only) parses back to the same server.
 */
#include <string.h>

#include "fuzz.h"
#include "store_spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct store_spec sp, again;
	char err[512], name[400], *s = malloc(size + 1);

	CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	if (store_spec_parse(s, &sp, err, sizeof(err)) == 0) {
		switch (sp.kind) {
		case STORE_KIND_REDIS:
			CHECK(sp.host[0] != '\0');
			CHECK(sp.port >= 1 && sp.port <= 65535);
			CHECK(sp.db >= 0 && sp.db <= STORE_SPEC_DB_MAX);
			CHECK(!sp.user[0] || sp.password[0]);
			store_spec_redis_name(&sp, name, sizeof(name));
			CHECK(store_spec_parse(name, &again, err, sizeof(err)) == 0);
			CHECK(again.kind == STORE_KIND_REDIS);
			CHECK(strcmp(again.host, sp.host) == 0);
			CHECK(again.port == sp.port && again.db == sp.db);
			break;
		case STORE_KIND_CMD:
			CHECK(sp.argc >= 1 && sp.argc <= STORE_SPEC_ARGS);
			CHECK(sp.argv[sp.argc] == NULL);
			for (int i = 0; i < sp.argc; i++) {
				CHECK(sp.argv[i][0] != '\0');
				CHECK(!strpbrk(sp.argv[i], " \t"));
				CHECK(sp.argv[i] >= sp.buf && sp.argv[i] < sp.buf + sizeof(sp.buf));
			}
			break;
		case STORE_KIND_FILE:
		case STORE_KIND_MEMORY:
		default:
			break;
		}
	} else {
		CHECK(err[0] != '\0');
	}
	free(s);
	return 0;
}
