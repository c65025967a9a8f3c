// Package proctest tells tests about processes on every Unix — whether one
// still runs, which are its children — with /proc on Linux and ps
// elsewhere: the kill -9 tests (no command outlives sluice) wait for
// processes that are not their own children to die.
package proctest

import (
	"strconv"
	"strings"
)

// pids parses a list of process IDs separated by white space.
func pids(s string) []int {
	var list []int
	for _, f := range strings.Fields(s) {
		if pid, err := strconv.Atoi(f); err == nil {
			list = append(list, pid)
		}
	}
	return list
}
