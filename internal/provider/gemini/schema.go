package gemini

import (
	"encoding/json"
	"fmt"
	"strings"
)

// maxSchemaDepth bounds nesting and $ref expansion: a recursive schema
// becomes a plain object past it.
const maxSchemaDepth = 16

// Schema converts a tool's JSON Schema into the OpenAPI subset that
// FunctionDeclaration.parameters takes. Gemini refuses what it does not
// know ($schema, additionalProperties, $ref, const, type arrays,
// string formats other than enum and date-time), so: keywords it lacks are
// dropped, $ref is expanded from $defs/definitions, a type array becomes
// the type and nullable, const a one-value enum, oneOf anyOf, and required
// names keeps only those in properties. It returns nil for a schema that
// declares no parameters: Gemini refuses an OBJECT without properties.
func Schema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	c := converter{defs: map[string]any{}}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, s := range d {
				c.defs["#/"+k+"/"+name] = s
			}
		}
	}
	out := c.convert(root, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 {
		return nil, nil
	}
	return out, nil
}

type converter struct {
	defs map[string]any
}

// simple are the keywords Gemini takes as they are.
var simple = []string{"description", "title", "minItems", "maxItems", "minimum", "maximum",
	"minLength", "maxLength", "pattern", "minProperties", "maxProperties", "propertyOrdering", "default", "example", "nullable"}

var types = map[string]string{"string": "STRING", "number": "NUMBER", "integer": "INTEGER",
	"boolean": "BOOLEAN", "array": "ARRAY", "object": "OBJECT"}

func (c *converter) convert(s map[string]any, depth int) map[string]any {
	out := map[string]any{}
	if depth > maxSchemaDepth {
		out["type"] = "OBJECT"
		return out
	}
	if ref, ok := s["$ref"].(string); ok {
		if target, ok := c.defs[ref].(map[string]any); ok {
			merged := map[string]any{}
			for k, v := range target {
				merged[k] = v
			}
			for k, v := range s { // the referring schema's own words win
				if k != "$ref" {
					merged[k] = v
				}
			}
			return c.convert(merged, depth+1)
		}
	}
	for _, k := range simple {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	switch t := s["type"].(type) {
	case string:
		if g, ok := types[t]; ok {
			out["type"] = g
		}
	case []any:
		var kinds []string
		for _, v := range t {
			name, _ := v.(string)
			if name == "null" {
				out["nullable"] = true
			} else if g, ok := types[name]; ok {
				kinds = append(kinds, g)
			}
		}
		if len(kinds) == 1 {
			out["type"] = kinds[0]
		} else if len(kinds) > 1 {
			var alts []any
			for _, k := range kinds {
				alts = append(alts, map[string]any{"type": k})
			}
			out["anyOf"] = alts
		}
	}
	if f, ok := s["format"].(string); ok && keepFormat(out["type"], f) {
		out["format"] = f
	}
	if v, ok := s["const"]; ok {
		if str, ok := v.(string); ok {
			out["enum"] = []any{str}
			out["type"] = "STRING"
		}
	}
	if e, ok := s["enum"].([]any); ok && allStrings(e) {
		out["enum"] = e
		if out["type"] == nil {
			out["type"] = "STRING"
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = c.convert(items, depth+1)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		conv := map[string]any{}
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				conv[name] = c.convert(ps, depth+1)
			}
		}
		out["properties"] = conv
		if req, ok := s["required"].([]any); ok {
			var keep []any
			for _, r := range req {
				if name, ok := r.(string); ok && conv[name] != nil {
					keep = append(keep, name)
				}
			}
			if len(keep) > 0 {
				out["required"] = keep
			}
		}
		if out["type"] == nil {
			out["type"] = "OBJECT"
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			var conv []any
			for _, a := range alts {
				if as, ok := a.(map[string]any); ok {
					if isNullSchema(as) {
						out["nullable"] = true
						continue
					}
					conv = append(conv, c.convert(as, depth+1))
				}
			}
			if len(conv) == 1 && out["type"] == nil {
				for k, v := range conv[0].(map[string]any) {
					if _, set := out[k]; !set {
						out[k] = v
					}
				}
			} else if len(conv) > 0 {
				out["anyOf"] = conv
			}
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		// Merged, the first word for each keyword winning: Gemini has no
		// allOf.
		for _, a := range all {
			if as, ok := a.(map[string]any); ok {
				for k, v := range c.convert(as, depth+1) {
					if _, set := out[k]; !set {
						out[k] = v
					}
				}
			}
		}
	}
	if out["type"] == "ARRAY" && out["items"] == nil {
		out["items"] = map[string]any{"type": "STRING"} // Gemini wants items
	}
	return out
}

// keepFormat reports whether Gemini takes format f for type t: enum and
// date-time for strings, int32/int64 for integers, float/double for
// numbers.
func keepFormat(t any, f string) bool {
	switch t {
	case "STRING":
		return f == "enum" || f == "date-time"
	case "INTEGER":
		return f == "int32" || f == "int64"
	case "NUMBER":
		return f == "float" || f == "double"
	}
	return false
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return len(vs) > 0
}

func isNullSchema(s map[string]any) bool {
	t, _ := s["type"].(string)
	return strings.EqualFold(t, "null") && len(s) == 1
}
