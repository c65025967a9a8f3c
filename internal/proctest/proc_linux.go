package proctest

import (
	"bytes"
	"fmt"
	"os"
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

// Children lists pid's child processes.
func Children(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	return pids(string(data))
}
