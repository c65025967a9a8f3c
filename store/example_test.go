package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/store"
)

// A session's records are appended to its log as it changes, durable
// when Append returns, and loaded back in order to restore it.
func ExampleJSONL() {
	ctx := context.Background()
	root, err := os.MkdirTemp("", "sessions")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	st := store.NewJSONL(root)
	key := store.Key{WorkDir: "/home/me/project", ID: "s1"}

	log, err := st.Create(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = log.Append(ctx, json.RawMessage(`{"kind":"meta","model":"demo"}`), json.RawMessage(`{"kind":"user","text":"hello"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	log.Close()

	if _, err := st.Create(ctx, key); errors.Is(err, store.ErrExists) {
		fmt.Println("create again: ErrExists")
	}
	records, warnings, err := st.Load(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range records {
		fmt.Println(string(r))
	}
	fmt.Println(len(warnings), "warnings")
	sessions, _ := st.List(ctx, key.WorkDir)
	fmt.Println(len(sessions), "session:", sessions[0].ID)
	// Output:
	// create again: ErrExists
	// {"kind":"meta","model":"demo"}
	// {"kind":"user","text":"hello"}
	// 0 warnings
	// 1 session: s1
}
