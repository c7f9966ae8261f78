/*
 * modrec.h - a session blob's module record: the modules loading the
 * session imports, read without unpickling anything (session.py writes
 * it; its top says where it lies in a version 3 blob, and a version 4
 * head, units.h, has it at the same place).
 *
 * The record is untrusted bytes from the store (signed, but by a key
 * whoever wrote the store holds): every name is checked to be a dotted
 * Python identifier in ASCII, the names sorted and distinct, within the
 * bounds below.  Fuzzed by fuzz/fuzz_modrec.c.
 */
#ifndef DOLSOT_MODREC_H
#define DOLSOT_MODREC_H

#include <stddef.h>

/* session.py's RECORD_MAX_BYTES and RECORD_MAX_MODULES: a longer record
 * is never written (the session then records none). */
#define MODREC_MAX_BYTES 16384
#define MODREC_MAX_MODULES 256

struct modrec {
	char text[MODREC_MAX_BYTES + 1];   /* the names, each NUL-terminated */
	const char *names[MODREC_MAX_MODULES];   /* into text, sorted */
	size_t n;
};

/*
 * The module record of the session blob open on fd (read with pread, at
 * offsets from 0; the fd's offset is left alone).  Returns 1 with r
 * filled (r->n may be 0: a session that imports nothing, or one whose
 * record stays empty), 0 when the blob is of a version without a record
 * (r->n is 0), or -1 with errno set: EINVAL for a damaged blob or record,
 * or what pread said.
 */
int modrec_read(int fd, struct modrec *r);

#endif
