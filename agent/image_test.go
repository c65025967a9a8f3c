package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model"
	"github.com/sluicehq/sluice/model/modeltest"
)

// Images sent with a message reach the model as image content after the
// text; the display names each; an image no API takes is refused at once.
func TestSubmitImages(t *testing.T) {
	t.Parallel()
	p := modeltest.NewScript(modeltest.Answer("m1", "A red square."))
	s := newSession(t, p, nil)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	h, err := s.SubmitImages(context.Background(), "what is this?", []agent.Image{{MediaType: "image/png", Data: png}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h.Wait(context.Background()); err != nil || res.Text != "A red square." {
		t.Fatalf("%q %v", res.Text, err)
	}
	content := p.Request(0).Messages[0].Content
	if len(content) != 2 || content[0].Text != "what is this?" || content[1].Type != model.ContentImage ||
		content[1].MediaType != "image/png" || content[1].Data != "iVBORw0KGgpmYWtl" {
		t.Fatalf("the model got %+v", content)
	}
	if got := s.Messages().Messages[0].Text(); got != "what is this?\n[image: image/png, 12 B]" {
		t.Errorf("display %q", got)
	}
	for _, bad := range []agent.Image{{MediaType: "image/tiff", Data: png}, {MediaType: "image/png"}, {MediaType: "image/png", Data: make([]byte, agent.MaxImageBytes+1)}} {
		if _, err := s.SubmitImages(context.Background(), "x", []agent.Image{bad}); !errors.Is(err, agent.ErrBadImage) {
			t.Errorf("%s of %d bytes: err %v, want ErrBadImage", bad.MediaType, len(bad.Data), err)
		}
	}
}
