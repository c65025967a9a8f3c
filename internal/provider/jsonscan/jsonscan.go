// Package jsonscan walks the members of a JSON object without decoding the
// values it is not asked about.
//
// Model stream events are small JSON objects of which a decoder needs two or
// three fields; encoding/json would allocate every string and reflect over a
// struct per event. Walking the bytes and decoding only the wanted strings
// (without allocation when they hold no escape) makes the hot path of a
// text delta cost one allocation: the text itself. Escaped strings are
// decoded by encoding/json, so their meaning is exactly the standard one.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// ErrSyntax is returned for input that is not a well-formed JSON object at
// the level walked. Nested values are only skipped, and checked only as far
// as finding their end takes.
var ErrSyntax = errors.New("jsonscan: malformed JSON object")

// Object calls fn for each member of the JSON object data, in order, with
// the member's key (without quotes, escapes left as they are) and its raw
// value. It stops at fn's first error and returns it.
func Object(data []byte, fn func(key, value []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return end(data, i+1)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return ErrSyntax
		}
		keyEnd, ok := skipString(data, i)
		if !ok {
			return ErrSyntax
		}
		key := data[i+1 : keyEnd-1]
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return ErrSyntax
		}
		i = skipSpace(data, i+1)
		valEnd, ok := skipValue(data, i)
		if !ok {
			return ErrSyntax
		}
		if err := fn(key, data[i:valEnd]); err != nil {
			return err
		}
		i = skipSpace(data, valEnd)
		if i >= len(data) {
			return ErrSyntax
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return end(data, i+1)
		default:
			return ErrSyntax
		}
	}
}

// Array calls fn for each element of the JSON array data, in order, with
// the element's raw value. Null is an empty array. It stops at fn's first
// error and returns it.
func Array(data []byte, fn func(value []byte) error) error {
	i := skipSpace(data, 0)
	if i < len(data) && IsNull(data[i:skipSpaceBack(data)]) {
		return nil
	}
	if i >= len(data) || data[i] != '[' {
		return ErrSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return end(data, i+1)
	}
	for {
		valEnd, ok := skipValue(data, i)
		if !ok {
			return ErrSyntax
		}
		if err := fn(data[i:valEnd]); err != nil {
			return err
		}
		i = skipSpace(data, valEnd)
		if i >= len(data) {
			return ErrSyntax
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return end(data, i+1)
		default:
			return ErrSyntax
		}
	}
}

// skipSpaceBack is the index after the last non-space byte of data.
func skipSpaceBack(data []byte) int {
	j := len(data)
	for j > 0 && (data[j-1] == ' ' || data[j-1] == '\t' || data[j-1] == '\n' || data[j-1] == '\r') {
		j--
	}
	return j
}

// end checks that only white space follows the object.
func end(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return ErrSyntax
	}
	return nil
}

// String decodes the JSON string value v. Null, and an absent value (v
// empty), decode to "".
func String(v []byte) (string, error) {
	if raw, ok := plain(v); ok {
		return string(raw), nil
	}
	if len(v) == 0 || IsNull(v) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", err
	}
	return s, nil
}

// Unquote returns the contents of the JSON string value v. It allocates only
// when v holds escapes; the result may alias v.
func Unquote(v []byte) ([]byte, error) {
	if raw, ok := plain(v); ok {
		return raw, nil
	}
	s, err := String(v)
	return []byte(s), err
}

// plain returns the contents of the string value v when they need no
// decoding: no escape, no control character, valid UTF-8.
func plain(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	raw := v[1 : len(v)-1]
	for _, c := range raw {
		if c == '\\' || c < 0x20 || c == '"' {
			return nil, false
		}
	}
	if !utf8.Valid(raw) {
		return nil, false
	}
	return raw, true
}

// Int decodes the JSON integer value v. Null decodes to 0.
func Int(v []byte) (int, error) {
	if IsNull(v) {
		return 0, nil
	}
	// Token counts and indices: plain digits, parsed without allocating.
	if len(v) > 0 && len(v) < 16 {
		n := 0
		for _, c := range v {
			if c < '0' || c > '9' {
				return strconv.Atoi(string(v))
			}
			n = n*10 + int(c-'0')
		}
		return n, nil
	}
	return strconv.Atoi(string(v))
}

// IsNull reports whether v is the JSON null.
func IsNull(v []byte) bool { return string(v) == "null" }

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string that starts at data[i].
func skipString(data []byte, i int) (int, bool) {
	i++
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return 0, false
		}
		j += i
		backslashes := 0
		for k := j - 1; k >= i && data[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1, true
		}
		i = j + 1
	}
}

// skipValue returns the index after the value that starts at data[i].
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{' || c == '[':
		return skipNested(data, i)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		j := i + 1
		for j < len(data) && (data[j] >= '0' && data[j] <= '9' || data[j] == '.' || data[j] == 'e' || data[j] == 'E' || data[j] == '+' || data[j] == '-') {
			j++
		}
		return j, true
	}
	return 0, false
}

func literal(data []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		return 0, false
	}
	return i + len(lit), true
}

// skipNested returns the index after the object or array at data[i],
// counting brackets and skipping strings. It does not check that the
// brackets match in kind: a caller that passes a nested value on checks it
// with json.Valid.
func skipNested(data []byte, i int) (int, bool) {
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			j, ok := skipString(data, i)
			if !ok {
				return 0, false
			}
			i = j
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, true
			}
		}
		i++
	}
	return 0, false
}
