package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/agent"
	"github.com/sluicehq/sluice/model/modeltest"
	"github.com/sluicehq/sluice/protocol"
)

// WebFetch asks for each new host through the normal permission requests;
// "always" approves that host only, for the rest of the session.
func TestWebFetchAsksPerHost(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("page " + r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	fetch := func(id, msg, url string) []modeltest.Step {
		return modeltest.Response(modeltest.Start(msg),
			modeltest.ToolUse(0, id, "WebFetch", map[string]any{"url": url, "prompt": "read it"}), modeltest.Stop("tool_use"))
	}
	p := modeltest.NewScript(
		fetch("t1", "m1", "http://127.0.0.1"+port+"/a"),
		fetch("t2", "m2", "http://127.0.0.1"+port+"/b"),
		fetch("t3", "m3", "http://localhost"+port+"/c"),
		modeltest.Answer("m4", "read them"),
	)
	var mu sync.Mutex
	var asked []string
	s := newSession(t, p, func(o *agent.Options) {
		o.Approve = func(_ context.Context, req protocol.PermissionRequest) protocol.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.CompactParams+" | "+req.Reason)
			return protocol.DecisionAllowAlways
		}
	})
	if _, err := s.Run(context.Background(), "read the pages"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || !strings.Contains(asked[0], "/a | WebFetch fetches from 127.0.0.1,") || !strings.Contains(asked[1], "/c | WebFetch fetches from localhost,") {
		t.Fatalf("asked %q: want the first call to each host only", asked)
	}
	for i, want := range []string{"page /a", "page /b", "page /c"} {
		if got := p.Request(i + 1).Messages; !strings.Contains(got[len(got)-1].Content[0].Text, want) {
			t.Errorf("request %d lacks %q: %+v", i+1, want, got[len(got)-1])
		}
	}
}
