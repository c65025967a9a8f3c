// Package initpages gives back the pages of the executable that package
// initialisation touched.
//
// Every command of the one sluice binary runs the init functions of all
// ~220 linked packages (SDKs of every provider and store included), and
// the kernel maps a file-backed page with its neighbours (fault-around,
// 64 KB on Linux): by the time main runs, about 15 MB of the binary's code,
// read-only data and function tables are resident, though a headless run
// uses only a few MB of them afterwards (so with the C library and the
// dynamic loader of a cgo build). Release unmaps them from the process; the
// pages stay in the page cache, shared and clean, and the ones still needed
// are mapped again on first use (a minor fault, no I/O).
package initpages
