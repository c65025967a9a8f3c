package fakemodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// The frames decode with the AWS library to the chunk's event and the
// exception's type and message; ServeBedrock sends them as Bedrock does.
func TestBedrockFrames(t *testing.T) {
	t.Parallel()
	event := []byte(`{"type":"message_stop"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ServeBedrock(w, append(BedrockChunk(event), BedrockException("throttlingException", "slow down")...), true)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.amazon.eventstream" {
		t.Fatalf("content type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(body)
	chunk, err := dec.Decode(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Bytes string }
	json.Unmarshal(chunk.Payload, &p)
	got, _ := base64.StdEncoding.DecodeString(p.Bytes)
	if chunk.Headers.Get(":event-type").String() != "chunk" || !bytes.Equal(got, event) {
		t.Fatalf("chunk %v: %s", chunk.Headers, chunk.Payload)
	}
	exc, err := dec.Decode(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exc.Headers.Get(":message-type").String() != "exception" || exc.Headers.Get(":exception-type").String() != "throttlingException" ||
		string(exc.Payload) != `{"message":"slow down"}` {
		t.Fatalf("exception %v: %s", exc.Headers, exc.Payload)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes left", r.Len())
	}
}
