// Package proctest tells tests whether a process is still running, on
// every Unix: the kill -9 tests (a command must not outlive sluice) wait
// for processes that are not their children to die.
package proctest
