/*
 * sampling.c - llm_query as MCP sampling: its declaration, the
 * createMessage request and the text of its answer.
 */
#include "sampling.h"

#include "proxy.h"

#include <stdio.h>
#include <string.h>

bool sampling_offered(const json_t *capabilities)
{
	return json_is_object(json_object_get(capabilities, "sampling"));
}

json_t *sampling_declaration(void)
{
	return json_pack(
		"{s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:[ss], s:n, s:s}, s:{s:s, s:i, s:i, s:s},"
		" s:{s:[ss], s:n, s:s}}, s:[s]}, s:{s:s}}",
		"name", SAMPLING_TOOL,
		"description", "Ask the model of the MCP client that runs this server (MCP "
		"sampling): its answer's text.",
		"inputSchema", "type", "object", "properties",
		"prompt", "type", "string", "description", "the user message",
		"system_prompt", "type", "string", "null", "default", "description",
		"a system prompt",
		"max_tokens", "type", "integer", "default", SAMPLING_MAX_TOKENS, "minimum", 1,
		"description", "the most tokens the answer may have",
		"model_preferences", "type", "object", "null", "default", "description",
		"MCP modelPreferences: hints, costPriority, speedPriority, intelligencePriority",
		"required", "prompt",
		"outputSchema", "type", "string");
}

json_t *sampling_params(const json_t *arguments, char *msg, size_t msglen)
{
	json_t *prompt = json_object_get(arguments, "prompt");
	json_t *system = json_object_get(arguments, "system_prompt");
	json_t *max = json_object_get(arguments, "max_tokens");
	json_t *prefs = json_object_get(arguments, "model_preferences");
	json_t *p;

	if (!json_is_string(prompt)) {
		snprintf(msg, msglen, "llm_query: prompt must be a string");
		return NULL;
	}
	if ((system && !json_is_null(system) && !json_is_string(system)) ||
	    (max && !json_is_null(max) && (!json_is_integer(max) || json_integer_value(max) < 1)) ||
	    (prefs && !json_is_null(prefs) && !json_is_object(prefs))) {
		snprintf(msg, msglen, "llm_query: system_prompt must be a string, max_tokens an "
		         "integer from 1, model_preferences a dict");
		return NULL;
	}
	p = json_pack("{s:[{s:s, s:{s:s, s:O}}], s:I}", "messages", "role", "user", "content",
	              "type", "text", "text", prompt, "maxTokens",
	              json_is_integer(max) ? json_integer_value(max) : SAMPLING_MAX_TOKENS);
	if (p && json_is_string(system))
		json_object_set(p, "systemPrompt", system);
	if (p && json_is_object(prefs))
		json_object_set(p, "modelPreferences", prefs);
	if (!p)
		snprintf(msg, msglen, "out of memory");
	return p;
}

json_t *sampling_value(const json_t *result, char *msg, size_t msglen)
{
	json_t *content = json_object_get(result, "content");
	json_t *list = json_is_array(content) ? json_incref(content) : json_pack("[O]", content);
	json_t *out = content ? proxy_texts(list) : NULL;

	json_decref(list);
	if (!out)
		snprintf(msg, msglen, "llm_query: the client's answer is not text");
	return out;
}
