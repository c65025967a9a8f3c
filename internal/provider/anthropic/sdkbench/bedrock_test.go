package sdkbench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	sdkbedrock "github.com/anthropics/anthropic-sdk-go/v2/bedrock"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluicehq/sluice/internal/provider/bedrock"
	"github.com/sluicehq/sluice/internal/sse"
	"github.com/sluicehq/sluice/model"
)

// BenchmarkDecodeBedrock decodes the same recorded stream carried in
// Bedrock's event-stream framing (each event a base64 "chunk" frame, built
// with the AWS encoder) into a whole message: with the bedrock provider's
// decoder, and with anthropic-sdk-go's Bedrock option, whose middleware
// turns the frames back into SSE for the SDK's stream (it runs behind an
// in-memory transport, so its figure also holds building and signing one
// request per decode).
func BenchmarkDecodeBedrock(b *testing.B) {
	raw, err := os.ReadFile("../testdata/thinking_web_search_citations.sse")
	if err != nil {
		b.Fatal(err)
	}
	frames, events := toFrames(b, raw)

	b.Run("sluice", func(b *testing.B) {
		measure(b, frames, events, func() {
			var acc model.Accumulator
			bedrock.DecodeStream(bytes.NewReader(frames), func(p model.Part, err error) bool {
				if err != nil {
					b.Fatal(err)
				}
				if err := acc.Add(p); err != nil {
					b.Fatal(err)
				}
				return true
			})
			if len(acc.Response().Content) != 17 {
				b.Fatal("wrong message")
			}
		})
	})

	b.Run("anthropic-sdk-go", func(b *testing.B) {
		client := sdk.NewClient(
			sdkbedrock.WithConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}),
			option.WithHTTPClient(&http.Client{Transport: framesTransport(frames)}),
			option.WithMaxRetries(0),
		)
		params := sdk.MessageNewParams{Model: "anthropic.claude-sonnet-4-6", MaxTokens: 1024,
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("hi"))}}
		measure(b, frames, events, func() {
			stream := client.Messages.NewStreaming(context.Background(), params)
			var msg sdk.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					b.Fatal(err)
				}
			}
			if stream.Err() != nil || len(msg.Content) != 17 {
				b.Fatal("wrong message", stream.Err())
			}
		})
	})
}

// toFrames re-frames a recorded SSE stream as Bedrock sends it.
func toFrames(b *testing.B, raw []byte) ([]byte, int) {
	d := sse.NewDecoder(bytes.NewReader(raw), 0)
	enc := eventstream.NewEncoder()
	var out bytes.Buffer
	n := 0
	for {
		ev, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil && err != sse.ErrTruncated {
			b.Fatal(err)
		}
		payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString(ev.Data), "p": "abcdefgh"})
		msg := eventstream.Message{Payload: payload}
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		if err := enc.Encode(&out, msg); err != nil {
			b.Fatal(err)
		}
		n++
		if err != nil {
			break
		}
	}
	return out.Bytes(), n
}

// framesTransport answers every request with the frames.
type framesTransport []byte

func (f framesTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Request: req,
		Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}},
		Body:   io.NopCloser(bytes.NewReader(f)),
	}, nil
}
