package tools

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/protocol"
)

// patch gives the hunks that the diff npm package's structuredPatch gives
// (what Claude Code shows): three lines of context, separate hunks for
// changes far apart, a marker for a last line without a newline.
func TestPatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, before, after string
		want                []protocol.Hunk
	}{
		{"same", "a\n", "a\n", nil},
		{"edit", "hello\nworld\n", "hello\nthere\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2, Lines: []string{" hello", "-world", "+there"}},
		}},
		{"append", "a\nb\n", "a\nb\nc\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 3, Lines: []string{" a", " b", "+c"}},
		}},
		{"from empty", "", "x\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 0, NewStart: 1, NewLines: 1, Lines: []string{"+x"}},
		}},
		{"to empty", "x\n", "", []protocol.Hunk{
			{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 0, Lines: []string{"-x"}},
		}},
		{"delete", "a\nb\nc\n", "a\nc\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 3, NewStart: 1, NewLines: 2, Lines: []string{" a", "-b", " c"}},
		}},
		{"no final newline", "a\nb", "a\nc", []protocol.Hunk{
			{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2, Lines: []string{
				" a", "-b", `\ No newline at end of file`, "+c", `\ No newline at end of file`,
			}},
		}},
		{"far apart", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 4, NewStart: 1, NewLines: 4, Lines: []string{"-1", "+one", " 2", " 3", " 4"}},
			{OldStart: 9, OldLines: 4, NewStart: 9, NewLines: 4, Lines: []string{" 9", " 10", " 11", "-12", "+twelve"}},
		}},
		{"near", "1\n2\n3\n4\n5\n", "one\n2\n3\n4\nfive\n", []protocol.Hunk{
			{OldStart: 1, OldLines: 5, NewStart: 1, NewLines: 5, Lines: []string{"-1", "+one", " 2", " 3", " 4", "-5", "+five"}},
		}},
	} {
		if got := patch(c.before, c.after); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: patch = %+v, want %+v", c.name, got, c.want)
		}
	}
}
