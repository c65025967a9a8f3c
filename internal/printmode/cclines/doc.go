// Package cclines translates a sluice session's run into Claude Code's
// headless output lines (the types are package streamjson's): the agent's
// items into stream_event, assistant, user and system lines (Translator),
// the background commands' task lines (TaskLines), the result line
// (NewResultLine) and its structured output (StructuredOutput), written
// one JSON line at a time by a Writer. It knows nothing of the stream-json
// control protocol: print mode's host drives it, and tells it only the
// permission decisions it made (Options.Decided).
package cclines
