package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func members(t testing.TB, data string) (map[string]string, error) {
	t.Helper()
	m := map[string]string{}
	err := Object([]byte(data), func(k, v []byte) error {
		m[string(k)] = string(v)
		return nil
	})
	return m, err
}

func TestObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want map[string]string
	}{
		{`{}`, map[string]string{}},
		{` { "a" : 1 , "b":"x\"y" ,"c":{"d":[1,{"e":"}"}]},"f":null,"g":true,"h":false,"i":-1.5e3 } `,
			map[string]string{"a": "1", "b": `"x\"y"`, "c": `{"d":[1,{"e":"}"}]}`, "f": "null", "g": "true", "h": "false", "i": "-1.5e3"}},
		{`{"a":"\\"}`, map[string]string{"a": `"\\"`}},
		{`{"a":1,"a":2}`, map[string]string{"a": "2"}},
	}
	for _, tt := range tests {
		got, err := members(t, tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if len(got) != len(tt.want) {
			t.Fatalf("%s: got %v", tt.in, got)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Fatalf("%s: %s = %s, want %s", tt.in, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1} x`, `{"a":"x}`, `{"a":tru}`, `{"a":{"b":1}`, `{a:1}`, `{"a":1 "b":2}`,
		`{"a":[1}`, `{"a":{"b"]}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":"\x"}`, `{"a":"\u12g4"}`, "{\"a\":\"\t\"}", `{"a":[1,]}`, `{"a":{,}}`,
		`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`} {
		if _, err := members(t, bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	deep := `{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`
	if _, err := members(t, deep); err != nil || !json.Valid([]byte(deep)) {
		t.Fatalf("nesting at the limit: %v", err)
	}
	stop := errors.New("stop")
	if err := Object([]byte(`{"a":1,"b":2}`), func(k, v []byte) error { return stop }); err != stop {
		t.Fatalf("fn's error not returned: %v", err)
	}
}

func TestArray(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`[]`: ``, ` null `: ``, `[1, "a" ,{"b":[2]},null]`: `1|"a"|{"b":[2]}|null|`, ` [ true ] `: `true|`,
	} {
		var got string
		if err := Array([]byte(in), func(v []byte) error { got += string(v) + "|"; return nil }); err != nil || got != want {
			t.Fatalf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `   `, `{}`, `[`, `[1,]`, `[1 2]`, `[1] x`, `nul`} {
		if err := Array([]byte(bad), func([]byte) error { return nil }); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`""`, `"plain"`, `"日本 👋"`, `"a\nb"`, `"\u00e9\ud83d\udc4b"`, `"\/"`, "\"bad \xff utf8\"", `null`,
		`"\"quoted\" \\ \b\f\n\r\t end"`, `"\n\n"`, `"é\n😀"`, "\"\xe2\\n\x80\xa8\"", `"a\\"`, `"mixed \n and \u2028"`} {
		got, err := String([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: got %q, want %q", in, got, want)
		}
		u, err := Unquote([]byte(in))
		if err != nil || string(u) != want {
			t.Fatalf("Unquote %s = %q, %v", in, u, err)
		}
	}
	for _, bad := range []string{`"a`, `x`, "\"a\tb\"", `"a\"`, `"a\x"`, `"a"b"`, "\"\\n\x01\""} {
		if _, err := String([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// special never misses a quote, backslash or control byte in any lane.
func TestSpecial(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		for lane := range 8 {
			w := []byte("aaaaaaaa")
			w[lane] = byte(c)
			want := c == '"' || c == '\\' || c < 0x20
			if got := special(binary.LittleEndian.Uint64(w)); want && !got {
				t.Fatalf("byte %#x in lane %d missed", c, lane)
			}
		}
	}
	if special(binary.LittleEndian.Uint64([]byte("plain é!"))) {
		t.Fatal("plain text flagged")
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"0": 0, "42": 42, "-7": -7, "null": 0, "123456789012": 123456789012} {
		if got, err := Int([]byte(in)); err != nil || got != want {
			t.Fatalf("%s = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "1.5", "x", `"1"`} {
		if _, err := Int([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStringAllocs(t *testing.T) {
	v := []byte(`"content_block_delta"`)
	if n := testing.AllocsPerRun(100, func() {
		if u, _ := Unquote(v); string(u) != "content_block_delta" {
			t.Fatal("wrong")
		}
	}); n != 0 {
		t.Fatalf("Unquote of a plain string allocates %v times", n)
	}
}

// A string with newlines and quotes escaped, as model text streams, is
// decoded in one allocation: the string.
func TestStringEscapedAllocs(t *testing.T) {
	v := []byte(`"Paragraph 1: \"quoted\".\n\n"`)
	if n := testing.AllocsPerRun(100, func() {
		if s, _ := String(v); s != "Paragraph 1: \"quoted\".\n\n" {
			t.Fatal("wrong")
		}
	}); n != 1 {
		t.Fatalf("String of an escaped string allocates %v times", n)
	}
}

// FuzzString: String decodes any string value as encoding/json does, and
// fails where it fails.
func FuzzString(f *testing.F) {
	for _, s := range []string{`""`, `"a\nb"`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\ud83d"`, "\"\xff\\n\"", `"a\"`, `"a\q"`, "\"\x01\"", `"é\n"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if len(v) == 0 || v[0] != '"' {
			return // null and absent values decode to "" by design
		}
		got, err := String(v)
		var want string
		werr := json.Unmarshal(v, &want)
		if (err == nil) != (werr == nil) || got != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json: %q, %v", v, got, err, want, werr)
		}
	})
}

func FuzzObject(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi \u00e9"}}`))
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":"\\\""}`))
	f.Add([]byte(`{"a":1,"a":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var elems []json.RawMessage
		aerr := Array(data, func(v []byte) error { elems = append(elems, v); return nil })
		trimmed := bytes.TrimSpace(data)
		if isArray := json.Valid(data) && (bytes.HasPrefix(trimmed, []byte("[")) || string(trimmed) == "null"); (aerr == nil) != isArray {
			t.Fatalf("Array: %v; json.Valid and an array: %v", aerr, isArray)
		}
		if aerr == nil && json.Valid(data) {
			var want []json.RawMessage
			if json.Unmarshal(data, &want) == nil && len(want) != len(elems) {
				t.Fatalf("%d elements, want %d", len(elems), len(want))
			}
		}
		got := map[string][]byte{}
		plainKeys := true
		err := Object(data, func(k, v []byte) error {
			got[string(k)] = v
			plainKeys = plainKeys && bytes.IndexByte(k, '\\') < 0 && utf8.Valid(k)
			if len(v) > 0 && v[0] == '"' {
				s, err := String(v)
				var want string
				if json.Unmarshal(v, &want) == nil && (err != nil || s != want) {
					t.Fatalf("String(%s) = %q, %v; want %q", v, s, err, want)
				}
			}
			return nil
		})
		isObject := json.Valid(data) && bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{"))
		if (err == nil) != isObject {
			t.Fatalf("Object: %v; json.Valid and an object: %v", err, isObject)
		}
		var want map[string]json.RawMessage
		if json.Unmarshal(data, &want) != nil {
			return
		}
		if want == nil { // "null"
			if err == nil {
				t.Fatal("null accepted as an object")
			}
			return
		}
		if err != nil {
			t.Fatalf("valid object rejected: %v", err)
		}
		if !plainKeys {
			return // escaped keys are compared raw: a different map
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("member %q = %s, want %s", k, got[k], v)
			}
		}
	})
}
