// Package model is sluice's provider-neutral view of a language model: the
// request it is sent (Request), and the ordered stream of parts that one
// response arrives as (Part), whatever the server (Anthropic Messages,
// OpenAI Chat Completions and compatible servers, the built-in demo).
//
// A Provider sends one attempt. Stream (in this package) wraps a Provider
// with what real servers need: retries with backoff, a stall watchdog and a
// non-streaming fallback, reporting each retry and stall in-band as parts so
// that a consumer can discard a failed attempt's output before the next.
package model
