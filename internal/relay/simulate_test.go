package relay

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/relay/route"
	"github.com/sluicehq/sluice/internal/relay/split"
)

func TestSimulate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []route.Kind
	}{
		// Seed 004: trace A went out as 8 messages, trace D as 59.
		{"trace_a.ndjson", []route.Kind{route.Final}},
		{"trace_d.ndjson", []route.Kind{route.Interstitial, route.Interstitial, route.Final, route.Final, route.Final}},
		{"tool_use_bash.ndjson", []route.Kind{route.Interstitial, route.Final}},
		{"parallel_tools.ndjson", []route.Kind{route.Interstitial, route.Final}},
		{"plain_text.ndjson", []route.Kind{route.Final}},
	}
	for _, tt := range tests {
		for _, limit := range []int{split.WeChatLimit, split.TelegramLimit} {
			f, err := os.Open("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Simulate(f, limit)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", tt.file, err)
			}
			var kinds []string
			for _, p := range got {
				kinds = append(kinds, string(p.Kind))
				if p.Units != split.Units(p.Text) || p.Units > limit {
					t.Errorf("%s: units %d for a %d-unit text, limit %d", tt.file, p.Units, split.Units(p.Text), limit)
				}
			}
			var want []string
			for _, k := range tt.want {
				want = append(want, string(k))
			}
			if strings.Join(kinds, ",") != strings.Join(want, ",") {
				t.Errorf("%s at %d: %v, want %v", tt.file, limit, kinds, want)
			}
		}
	}
}

func TestSimulateBadLine(t *testing.T) {
	t.Parallel()
	_, err := Simulate(strings.NewReader("{\"type\":\"system\"}\nnot json\n"), split.WeChatLimit)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}
