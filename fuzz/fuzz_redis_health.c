/*
 * fuzz_redis_health.c - libFuzzer harness for what a Redis server says of
 * itself (redis_health.c): the input is split at its first two NUL bytes
 * into the INFO server, memory and persistence answers.
 *
 * Whatever the text, every field read stays NUL-terminated within its
 * array, aof is -1, 0 or 1, and the policy verdict is 0 exactly for
 * noeviction or an unknown policy, with a message otherwise.
 */
#include <string.h>

#include "fuzz.h"
#include "redis_health.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[512];
	const char *part = text;
	struct redis_health h;
	int verdict;

	CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&h, 0, sizeof(h));
	h.rdb = -1;
	h.aof = -1;
	for (int section = 0; section < 3; section++) {
		redis_health_info(&h, section, part);
		part += strlen(part);
		if (part < text + size)
			part++;
	}
	CHECK(memchr(h.policy, '\0', sizeof(h.policy)) != NULL);
	CHECK(memchr(h.run_id, '\0', sizeof(h.run_id)) != NULL);
	CHECK(h.aof >= -1 && h.aof <= 1);
	err[0] = '\0';
	verdict = redis_health_policy(&h, "127.0.0.1:6379", err, sizeof(err));
	CHECK(verdict == 0 || verdict == -1);
	CHECK((verdict == 0) == (h.policy[0] == '\0' || strcmp(h.policy, "noeviction") == 0));
	CHECK(verdict == 0 || (err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL));
	free(text);
	return 0;
}
