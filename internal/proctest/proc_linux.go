package proctest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Alive reports whether pid runs. A zombie does not: in a container the
// reaper of orphans may be slow, or absent.
func Alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// Children lists pid's child processes. A child is listed under the
// thread that started it, which in a Go program is any of its threads,
// so every thread's list is read.
func Children(pid int) []int {
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var all []byte
	for _, l := range lists {
		data, _ := os.ReadFile(l)
		all = append(append(all, data...), ' ')
	}
	return pids(string(all))
}
