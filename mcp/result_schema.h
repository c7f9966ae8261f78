/*
 * result_schema.h - schema/result.schema.json, compiled into the binary
 * (the Makefile makes build/result_schema.c), for the MCP tools' output
 * schemas.  NUL-terminated.
 */
#ifndef DOLSOT_RESULT_SCHEMA_H
#define DOLSOT_RESULT_SCHEMA_H

extern const char result_schema_json[];

#endif
