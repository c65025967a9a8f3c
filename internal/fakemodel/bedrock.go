package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// Bedrock's InvokeModelWithResponseStream answers in AWS's binary event
// stream encoding, not in server-sent events: these build its frames, for
// the fault handlers' bodies.

// BedrockFrame is one message of the event stream encoding (built with the
// AWS library's encoder) with payload and the string headers named and
// valued in pairs.
func BedrockFrame(payload []byte, header ...string) []byte {
	if len(header)%2 != 0 {
		panic("fakemodel.BedrockFrame: a header without a value")
	}
	msg := eventstream.Message{Payload: payload}
	for i := 0; i < len(header); i += 2 {
		msg.Headers.Set(header[i], eventstream.StringValue(header[i+1]))
	}
	var b bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&b, msg); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// BedrockChunk is one Anthropic stream event as Bedrock sends it: a
// "chunk" event whose payload holds the event's JSON in base64, padded
// with a "p" field of varying length as Bedrock pads it.
func BedrockChunk(event []byte) []byte {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(event), "p": "abcdefghijklmnopqrstuvwxyzABCDEFGH"[:len(event)%20]})
	return BedrockFrame(payload, ":message-type", "event", ":event-type", "chunk", ":content-type", "application/json")
}

// BedrockException is the frame of one of Bedrock's exceptions
// (throttlingException, modelStreamErrorException, ...) saying message.
func BedrockException(name, message string) []byte {
	payload, _ := json.Marshal(map[string]string{"message": message})
	return BedrockFrame(payload, ":message-type", "exception", ":exception-type", name, ":content-type", "application/json")
}

// ServeBedrock writes body as Bedrock's 200 answer, whole or one byte per
// flushed write.
func ServeBedrock(w http.ResponseWriter, body []byte, oneByte bool) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Bedrock-Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if !oneByte {
		w.Write(body)
		return
	}
	for i := range body {
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}
