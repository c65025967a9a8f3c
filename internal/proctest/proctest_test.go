package proctest

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestAliveAndChildren(t *testing.T) {
	t.Parallel()
	running := exec.Command("sleep", "1000")
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = running.Process.Kill()
		_ = running.Wait()
	}()
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		pid   int
		alive bool
	}{
		{"this process", os.Getpid(), true},
		{"a running child", running.Process.Pid, true},
		{"a child that ended and was reaped", ended.Process.Pid, false},
	}
	for _, tt := range tests {
		if got := Alive(tt.pid); got != tt.alive {
			t.Errorf("%s: Alive(%d) = %v, want %v", tt.name, tt.pid, got, tt.alive)
		}
	}
	if children := Children(os.Getpid()); !slices.Contains(children, running.Process.Pid) {
		t.Errorf("Children(this process) = %v, want it to hold %d", children, running.Process.Pid)
	}
}
