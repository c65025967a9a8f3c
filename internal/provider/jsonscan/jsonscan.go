// Package jsonscan walks the members of a JSON object, checking the whole
// document against the JSON grammar, without decoding the values it is not
// asked about.
//
// Model stream events are small JSON objects of which a decoder needs two or
// three fields; encoding/json would allocate every string and reflect over a
// struct per event. Walking the bytes and decoding only the wanted strings
// (without allocation when they hold no escape) makes the hot path of a
// text delta cost one allocation: the text itself. The check is a single
// pass, several times faster than json.Valid, so raw values (a server's
// content block, a citation) can be passed on without a second one.
// Strings with escapes other than the two-byte ones (\n, \", ...) are
// decoded by encoding/json, and a fuzz target holds the ones decoded here
// to it, so their meaning is exactly the standard one.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrSyntax is returned for input that is not valid JSON, or not an object
// (an array for Array). The whole input is checked, nested values included,
// so a raw value handed to a callback is valid JSON.
var ErrSyntax = errors.New("jsonscan: malformed JSON")

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
		valEnd, ok := skipValue(data, i, 1)
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
		valEnd, ok := skipValue(data, i, 1)
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
	if s, ok := unescape(v); ok {
		return s, nil
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

// unescape decodes the string value v when its only escapes are the
// two-byte ones (\" \\ \/ \b \f \n \r \t) and the rest is valid UTF-8
// without control bytes: model text, whose newlines and quotes are
// escaped in some fifth of a stream's deltas, decoded here in one
// allocation rather than by reflection in three. Anything else (a \u
// escape, invalid UTF-8, an unescaped control byte or quote) is left to
// encoding/json, the reference for what a string means.
func unescape(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	raw := v[1 : len(v)-1]
	var b strings.Builder
	b.Grow(len(raw))
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			i = len(raw)
		}
		for _, c := range raw[:i] {
			if c < 0x20 || c == '"' {
				return "", false
			}
		}
		b.Write(raw[:i])
		if i == len(raw) {
			break
		}
		if i+1 == len(raw) {
			return "", false // the closing quote is escaped: not a string
		}
		switch c := raw[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default:
			return "", false
		}
		raw = raw[i+2:]
	}
	// The escapes wrote ASCII, so the result is valid exactly when the
	// bytes between them are.
	if s := b.String(); utf8.ValidString(s) {
		return s, true
	}
	return "", false
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

// maxDepth is encoding/json's nesting limit, so that both accept the same
// documents.
const maxDepth = 10000

// plainByte[c] is true for the bytes a string holds as they are.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString returns the index after the string that starts at data[i],
// checking its escapes.
func skipString(data []byte, i int) (int, bool) {
	i++
	for i < len(data) {
		// Eight bytes at a time while none is special: strings are most of
		// a stream's bytes.
		for i+8 <= len(data) && !special(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		if plainByte[c] {
			i++
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			if i+1 >= len(data) {
				return 0, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !hex4(data[i+2:i+6]) {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default:
			return 0, false // a control character
		}
	}
	return 0, false
}

// special reports whether one of the eight bytes in w may be a quote, a
// backslash or a control character (it may err towards yes, never no).
func special(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	return (zero(w^(ones*'"')) | zero(w^(ones*'\\')) | (w-ones*0x20)&^w&highs) != 0
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skipValue returns the index after the value that starts at data[i],
// checking it against the JSON grammar; depth is its nesting level.
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{':
		return skipObject(data, i, depth+1)
	case c == '[':
		return skipArray(data, i, depth+1)
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(data, i)
	}
	return 0, false
}

func literal(data []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		return 0, false
	}
	return i + len(lit), true
}

// skipNumber returns the index after the number at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) (int, bool) {
	digits := func() bool {
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > start
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case !digits():
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	return i, true
}

// skipObject returns the index after the object at data[i].
func skipObject(data []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return 0, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, false
		}
		j, ok := skipString(data, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(data, j)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		if i, ok = skipValue(data, skipSpace(data, i+1), depth); !ok {
			return 0, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// skipArray returns the index after the array at data[i].
func skipArray(data []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return 0, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = skipValue(data, i, depth); !ok {
			return 0, false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}
