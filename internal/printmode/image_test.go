package printmode

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/internal/fakemodel"
	"github.com/sluicehq/sluice/internal/provider/anthropic"
	"github.com/sluicehq/sluice/model"
)

// An image block in a stream-json user message, as the Agent SDK sends it,
// reaches the model as an image block after the text.
func TestStreamJSONImageReachesTheModel(t *testing.T) {
	t.Parallel()
	srv, err := fakemodel.NewScript(fakemodel.Anthropic, answers(t, "say:A red square."))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	sess, err := agent.New(agent.Options{
		Provider: anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: srv.URL}),
		Model:    "test-model", WorkDir: t.TempDir(), Stream: model.StreamOptions{MaxRetries: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	in := `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"what is this?"},` +
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgpmYWtl"}}]}}` + "\n"
	var stdout, stderr bytes.Buffer
	code := Run(t.Context(), sess, "", Config{
		OutputFormat: FormatStreamJSON, InputFormat: FormatStreamJSON,
		Stdin: strings.NewReader(in), Stdout: &stdout, Stderr: &stderr,
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Messages []struct {
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	got := string(body.Messages[0].Content[len(body.Messages[0].Content)-1])
	if want := `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgpmYWtl"}}`; got != want {
		t.Errorf("the model's last block %s, want %s", got, want)
	}
}

func TestUserContentImages(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line, text string
		images     int
		err        bool
	}{
		{line: `{"type":"user","message":{"role":"user","content":"hi"}}`, text: "hi"},
		{line: `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"AAAA"}}]}}`, images: 1},
		{line: `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]}}`, err: true},
		{line: `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}}`, err: true},
	} {
		text, images, err := userContent([]byte(tt.line))
		if (err != nil) != tt.err || text != tt.text || len(images) != tt.images {
			t.Errorf("%s: %q, %d images, %v", tt.line, text, len(images), err)
		}
	}
}
