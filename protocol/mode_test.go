package protocol

import (
	"errors"
	"testing"
)

func TestParsePermissionMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    PermissionMode
		wantErr error
	}{
		{"", ModeDefault, nil},
		{"default", ModeDefault, nil},
		{"acceptEdits", ModeAcceptEdits, nil},
		{"bypassPermissions", ModeBypassPermissions, nil},
		{"plan", ModePlan, nil},
		{"Plan", "", ErrUnknownPermissionMode},
		{"accept-edits", "", ErrUnknownPermissionMode},
		{"yolo", "", ErrUnknownPermissionMode},
	}
	for _, tt := range tests {
		got, err := ParsePermissionMode(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("ParsePermissionMode(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
