/*
 * sampling.h - llm_query(prompt, system_prompt=None, max_tokens=1024,
 * model_preferences=None) in a cell of `dolsot mcp` (issue 37): a
 * sampling/createMessage request to the MCP client that attached dolsot,
 * when that client declared the sampling capability; its answer's text is
 * the value.  Here: the tool's declaration, the request's params from a
 * call's arguments, and the value from the client's result.  No I/O.
 */
#ifndef DOLSOT_SAMPLING_H
#define DOLSOT_SAMPLING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SAMPLING_TOOL "llm_query"
#define SAMPLING_MAX_TOKENS 1024

/* Whether initialize's capabilities (its params' "capabilities") offer
 * sampling. */
bool sampling_offered(const json_t *capabilities);

/* llm_query's declaration for the cells (hosttools.h); a new reference. */
json_t *sampling_declaration(void);

/* sampling/createMessage's params for llm_query's arguments: a new
 * reference, or NULL with why in msg. */
json_t *sampling_params(const json_t *arguments, char *msg, size_t msglen);

/* The text of a CreateMessageResult (its content's text blocks, joined),
 * a new reference; or NULL with why in msg. */
json_t *sampling_value(const json_t *result, char *msg, size_t msglen);

#endif
