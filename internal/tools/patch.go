package tools

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/sluicehq/sluice/protocol"
)

// patchContext is how many unchanged lines surround a change in a hunk,
// as in `diff -u`.
const patchContext = 3

// maxFileData bounds the files whose text and change a call reports as
// data (tool.Result.File): a larger one would make every face's end event
// as large as the file.
const maxFileData = 256 << 10

// patch is the change from before to after as unified diff hunks (none
// when they are equal).
func patch(before, after string) []protocol.Hunk {
	if before == after {
		return nil
	}
	u, err := udiff.ToUnifiedDiff("", "", before, udiff.Lines(before, after), patchContext)
	if err != nil {
		// Lines makes edits that fit before; an error is a bug there.
		panic("tools: diff: " + err.Error())
	}
	hunks := make([]protocol.Hunk, 0, len(u.Hunks))
	for _, h := range u.Hunks {
		out := protocol.Hunk{OldStart: h.FromLine, NewStart: h.ToLine, Lines: make([]string, 0, len(h.Lines))}
		for _, l := range h.Lines {
			mark := " "
			switch l.Kind {
			case udiff.Delete:
				mark = "-"
				out.OldLines++
			case udiff.Insert:
				mark = "+"
				out.NewLines++
			default:
				out.OldLines++
				out.NewLines++
			}
			text, ended := strings.CutSuffix(l.Content, "\n")
			out.Lines = append(out.Lines, mark+text)
			if !ended {
				out.Lines = append(out.Lines, `\ No newline at end of file`)
			}
		}
		hunks = append(hunks, out)
	}
	return hunks
}

// changed is what a call that turned a file's text from before into after
// reports as data (a created file has no patch: all of it is new), nil for
// a file over maxFileData.
func changed(path, before, after string, created bool) *protocol.ToolFile {
	if len(before) > maxFileData || len(after) > maxFileData {
		return nil
	}
	f := &protocol.ToolFile{Path: path, Original: before, Created: created}
	if !created {
		f.Patch = patch(before, after)
	}
	return f
}
