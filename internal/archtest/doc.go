// Package archtest holds the import rules of sluice's layers as a test:
// the faces (the terminal UI, print mode, the JSON-RPC host protocol, the
// web page, ACP, the chat relay) drive sessions through package session
// and share what lies below them, and none imports another; the cluster
// lies below the faces and imports none. Commands (package main) wire
// faces together and are exempt, as are tests, which may run one face
// against another.
package archtest
