package termmd

import (
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// The highlighted languages are a small set written here rather than
// chroma's lexers package: that package parses some 250 embedded lexer
// definitions when it is initialised, which every command of the binary
// paid for at start (2.3 MB, ~9 ms), TUI or not. These are built on first
// use and cover what answers mostly hold; other languages are shown in the
// code colour without highlighting.

// lexerFor returns the lexer for a fenced block's language, or nil.
func lexerFor(lang string) chroma.Lexer {
	return lexerSet()[strings.ToLower(lang)]
}

var lexerSet = sync.OnceValue(func() map[string]chroma.Lexer {
	set := map[string]chroma.Lexer{}
	add := func(l chroma.Lexer) {
		for _, a := range l.Config().Aliases {
			set[a] = l
		}
	}
	for _, c := range cFamilies() {
		add(c.lexer())
	}
	add(pythonLexer())
	add(shellLexer())
	add(jsonLexer())
	add(yamlLexer())
	add(tomlLexer())
	add(diffLexer())
	add(sqlLexer())
	add(markupLexer())
	return set
})

// cFamily describes a language with C-like tokens: // and /* */ comments,
// quoted strings, identifiers and calls.
type cFamily struct {
	aliases                  []string
	namespace, declaration   []string
	keywords, types          []string
	constants, builtins      []string
	charQuote, backtickQuote bool // '…' is a character; `…` is a string
	hashComment              bool // # starts a comment too
}

func cFamilies() []cFamily {
	jsKeywords := []string{"break", "case", "catch", "continue", "default", "delete", "do", "else", "finally",
		"for", "if", "in", "instanceof", "new", "of", "return", "switch", "throw", "try", "typeof", "void",
		"while", "with", "yield", "await", "async", "extends", "static", "get", "set"}
	jsDecl := []string{"var", "let", "const", "function", "class"}
	jsConst := []string{"true", "false", "null", "undefined", "NaN", "Infinity", "this", "super"}
	jsBuiltins := []string{"console", "Object", "Array", "String", "Number", "Boolean", "Promise", "JSON",
		"Math", "Date", "Error", "Map", "Set", "Symbol", "RegExp", "require", "module", "exports", "window",
		"document", "process"}
	cKeywords := []string{"break", "case", "continue", "default", "do", "else", "for", "goto", "if",
		"return", "sizeof", "switch", "while", "typedef", "extern", "static", "const", "volatile",
		"register", "inline", "restrict"}
	cTypes := []string{"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
		"bool", "size_t", "ssize_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
		"uint32_t", "uint64_t", "FILE"}
	return []cFamily{
		{
			aliases:     []string{"go", "golang"},
			namespace:   []string{"package", "import"},
			declaration: []string{"var", "func", "struct", "map", "chan", "type", "interface", "const"},
			keywords: []string{"break", "default", "select", "case", "defer", "go", "else", "goto", "switch",
				"fallthrough", "if", "range", "continue", "for", "return"},
			types: []string{"uint", "uint8", "uint16", "uint32", "uint64", "int", "int8", "int16", "int32",
				"int64", "float32", "float64", "complex64", "complex128", "byte", "rune", "string", "bool",
				"error", "uintptr", "any"},
			constants: []string{"true", "false", "iota", "nil"},
			builtins: []string{"append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len",
				"make", "max", "min", "new", "panic", "print", "println", "real", "recover"},
			charQuote: true, backtickQuote: true,
		},
		{
			aliases:     []string{"javascript", "js", "jsx", "mjs", "cjs", "node"},
			namespace:   []string{"import", "export", "from"},
			declaration: jsDecl, keywords: jsKeywords, constants: jsConst, builtins: jsBuiltins,
			backtickQuote: true,
		},
		{
			aliases:     []string{"typescript", "ts", "tsx", "mts"},
			namespace:   []string{"import", "export", "from", "namespace", "module", "declare"},
			declaration: append([]string{"interface", "type", "enum", "implements", "readonly", "public", "private", "protected", "abstract"}, jsDecl...),
			keywords:    append([]string{"as", "is", "keyof", "satisfies"}, jsKeywords...),
			types:       []string{"string", "number", "boolean", "any", "unknown", "never", "void", "object", "bigint", "symbol"},
			constants:   jsConst, builtins: jsBuiltins,
			backtickQuote: true,
		},
		{
			aliases:     []string{"rust", "rs"},
			namespace:   []string{"use", "mod", "crate", "extern"},
			declaration: []string{"fn", "let", "mut", "const", "static", "struct", "enum", "trait", "impl", "type", "pub", "where", "dyn", "ref"},
			keywords: []string{"as", "async", "await", "break", "continue", "else", "for", "if", "in", "loop",
				"match", "move", "return", "unsafe", "while"},
			types: []string{"u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128",
				"isize", "f32", "f64", "bool", "char", "str", "String", "Vec", "Option", "Result", "Box", "Self"},
			constants: []string{"true", "false", "None", "Some", "Ok", "Err", "self", "super"},
			builtins:  []string{"println", "print", "eprintln", "format", "vec", "panic", "assert", "assert_eq", "todo", "unimplemented", "write", "writeln"},
			charQuote: true,
		},
		{
			aliases:   []string{"c", "h"},
			keywords:  append([]string{"struct", "union", "enum"}, cKeywords...),
			types:     cTypes,
			constants: []string{"NULL", "true", "false"},
			builtins:  []string{"printf", "fprintf", "sprintf", "snprintf", "malloc", "calloc", "realloc", "free", "memcpy", "memset", "strlen", "strcmp"},
			charQuote: true, hashComment: true,
		},
		{
			aliases:     []string{"cpp", "c++", "cc", "cxx", "hpp", "hh"},
			namespace:   []string{"namespace", "using", "template", "typename"},
			declaration: []string{"class", "struct", "union", "enum", "public", "private", "protected", "virtual", "override", "final", "auto", "constexpr", "noexcept", "friend", "operator"},
			keywords:    append([]string{"new", "delete", "try", "catch", "throw", "this", "co_await", "co_return", "static_cast", "dynamic_cast", "reinterpret_cast", "const_cast"}, cKeywords...),
			types:       append([]string{"wchar_t", "char16_t", "char32_t"}, cTypes...),
			constants:   []string{"nullptr", "NULL", "true", "false"},
			builtins:    []string{"std", "cout", "cerr", "endl", "printf", "move", "make_unique", "make_shared"},
			charQuote:   true, hashComment: true,
		},
		{
			aliases:     []string{"java", "kotlin", "kt", "kts", "scala", "groovy", "csharp", "cs", "c#", "swift", "dart"},
			namespace:   []string{"package", "import", "using", "namespace"},
			declaration: []string{"class", "interface", "enum", "record", "struct", "object", "fun", "func", "def", "val", "var", "let", "public", "private", "protected", "internal", "static", "final", "abstract", "override", "open", "data", "sealed", "extends", "implements", "void"},
			keywords: []string{"break", "case", "catch", "continue", "default", "do", "else", "finally", "for",
				"foreach", "if", "in", "is", "as", "new", "return", "switch", "throw", "throws", "try", "when",
				"while", "guard", "async", "await", "yield", "synchronized"},
			types: []string{"int", "long", "short", "byte", "char", "float", "double", "boolean", "bool",
				"string", "String", "Int", "Long", "Double", "Boolean", "Unit", "Any", "object", "decimal"},
			constants: []string{"true", "false", "null", "nil", "this", "self", "super"},
			builtins:  []string{"System", "println", "print", "Console", "List", "Map", "listOf", "mapOf"},
			charQuote: true,
		},
	}
}

func (c cFamily) lexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: c.aliases[0], Aliases: c.aliases, EnsureNL: true}, func() chroma.Rules {
		root := []chroma.Rule{
			rule(`\n`, chroma.Text, nil),
			rule(`\s+`, chroma.Text, nil),
			rule(`//[^\n]*`, chroma.CommentSingle, nil),
			rule(`/\*[\s\S]*?\*/`, chroma.CommentMultiline, nil),
		}
		if c.hashComment {
			root = append(root, rule(`#[^\n]*`, chroma.CommentPreproc, nil))
		}
		root = append(root,
			rule(`"(\\.|[^"\\\n])*"`, chroma.LiteralString, nil),
		)
		if c.charQuote {
			root = append(root, rule(`'(\\.|[^\\'\n]){1,8}'`, chroma.LiteralStringChar, nil))
		} else {
			root = append(root, rule(`'(\\.|[^'\\\n])*'`, chroma.LiteralString, nil))
		}
		if c.backtickQuote {
			root = append(root, rule("`[^`]*`", chroma.LiteralStringBacktick, nil))
		}
		root = append(root, rule(numberPattern, chroma.LiteralNumber, nil))
		root = appendWords(root, c.namespace, chroma.KeywordNamespace)
		root = appendWords(root, c.declaration, chroma.KeywordDeclaration)
		root = appendWords(root, c.keywords, chroma.Keyword)
		root = appendWords(root, c.constants, chroma.KeywordConstant)
		if len(c.builtins) > 0 {
			root = append(root, rule(chroma.Words(`\b`, `\b`, c.builtins...), chroma.NameBuiltin, nil))
		}
		root = appendWords(root, c.types, chroma.KeywordType)
		root = append(root,
			rule(`@[A-Za-z_][\w.]*`, chroma.NameDecorator, nil),
			rule(`([A-Za-z_$][\w$]*)(\s*)(\()`, chroma.ByGroups(chroma.NameFunction, chroma.Text, chroma.Punctuation), nil),
			rule(`[A-Za-z_$][\w$]*`, chroma.Name, nil),
			rule(`(<<=|>>=|<<|>>|<=|>=|&\^|\+=|-=|\*=|/=|%=|&=|\|=|&&|\|\||<-|->|=>|\+\+|--|==|!=|:=|::|\.\.\.|[+\-*/%&|^!~?=<>])`, chroma.Operator, nil),
			rule(`[()\[\]{}.,;:]`, chroma.Punctuation, nil),
			rule(`.`, chroma.Text, nil),
		)
		return chroma.Rules{"root": root}
	})
}

const numberPattern = `(0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*(\.\d+)?([eE][+-]?\d+)?)[a-zA-Z]*\b`

func appendWords(rules []chroma.Rule, words []string, t chroma.TokenType) []chroma.Rule {
	if len(words) == 0 {
		return rules
	}
	return append(rules, rule(chroma.Words(`\b`, `\b`, words...), t, nil))
}

func pythonLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "python", Aliases: []string{"python", "py", "python3", "py3"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\n`, chroma.Text, nil),
			rule(`\s+`, chroma.Text, nil),
			rule(`#[^\n]*`, chroma.CommentSingle, nil),
			rule(`[rbfuRBFU]{0,2}"""[\s\S]*?"""`, chroma.LiteralStringDoc, nil),
			rule(`[rbfuRBFU]{0,2}'''[\s\S]*?'''`, chroma.LiteralStringDoc, nil),
			rule(`[rbfuRBFU]{0,2}"(\\.|[^"\\\n])*"`, chroma.LiteralString, nil),
			rule(`[rbfuRBFU]{0,2}'(\\.|[^'\\\n])*'`, chroma.LiteralString, nil),
			rule(`@[A-Za-z_][\w.]*`, chroma.NameDecorator, nil),
			rule(`(def)(\s+)([A-Za-z_]\w*)`, chroma.ByGroups(chroma.KeywordDeclaration, chroma.Text, chroma.NameFunction), nil),
			rule(`(class)(\s+)([A-Za-z_]\w*)`, chroma.ByGroups(chroma.KeywordDeclaration, chroma.Text, chroma.NameClass), nil),
			rule(chroma.Words(`\b`, `\b`, "import", "from"), chroma.KeywordNamespace, nil),
			rule(chroma.Words(`\b`, `\b`, "and", "as", "assert", "async", "await", "break", "continue", "del", "elif", "else",
				"except", "finally", "for", "global", "if", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
				"raise", "return", "try", "while", "with", "yield", "match", "case"), chroma.Keyword, nil),
			rule(chroma.Words(`\b`, `\b`, "True", "False", "None", "self", "cls"), chroma.KeywordConstant, nil),
			rule(chroma.Words(`\b`, `\b`, "print", "len", "range", "open", "str", "int", "float", "list", "dict", "set",
				"tuple", "bool", "enumerate", "zip", "map", "filter", "sorted", "isinstance", "super", "type",
				"min", "max", "sum", "any", "all", "repr", "input", "Exception", "ValueError", "KeyError",
				"TypeError"), chroma.NameBuiltin, nil),
			rule(numberPattern, chroma.LiteralNumber, nil),
			rule(`([A-Za-z_]\w*)(\s*)(\()`, chroma.ByGroups(chroma.NameFunction, chroma.Text, chroma.Punctuation), nil),
			rule(`[A-Za-z_]\w*`, chroma.Name, nil),
			rule(`(\*\*|//|==|!=|<=|>=|->|:=|[+\-*/%&|^~<>=])`, chroma.Operator, nil),
			rule(`[()\[\]{}.,;:]`, chroma.Punctuation, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func shellLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "shell", Aliases: []string{"bash", "sh", "shell", "zsh", "console", "shell-session", "terminal", "ksh"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\n`, chroma.Text, nil),
			rule(`\s+`, chroma.Text, nil),
			rule(`#[^\n]*`, chroma.CommentSingle, nil),
			rule(`"(\\[\s\S]|[^"\\])*"`, chroma.LiteralStringDouble, nil),
			rule(`'[^']*'`, chroma.LiteralStringSingle, nil),
			rule(`\$\{[^}]*\}|\$\(|\$[\w@#?$!*-]+`, chroma.NameVariable, nil),
			rule(chroma.Words(`\b`, `\b`, "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
				"case", "esac", "in", "function", "select", "time"), chroma.Keyword, nil),
			rule(chroma.Words(`\b`, `\b`, "echo", "cd", "export", "local", "return", "exit", "set", "unset", "source",
				"read", "printf", "test", "eval", "exec", "shift", "trap", "alias", "sudo"), chroma.NameBuiltin, nil),
			rule(`(^|(?<=[|;&]\s*))[A-Za-z_][\w.-]*(?==)`, chroma.NameVariable, nil),
			rule(`--?[A-Za-z0-9][\w-]*`, chroma.NameAttribute, nil),
			rule(`\d+\b`, chroma.LiteralNumber, nil),
			rule(`(&&|\|\||[|&;<>]|\$)`, chroma.Operator, nil),
			rule(`[()\[\]{}]`, chroma.Punctuation, nil),
			rule(`[^\s$"'#|&;<>()\[\]{}]+`, chroma.Text, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func jsonLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "json", Aliases: []string{"json", "jsonc", "json5", "jsonl", "ndjson"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\s+`, chroma.Text, nil),
			rule(`//[^\n]*`, chroma.CommentSingle, nil),
			rule(`("(?:\\[\s\S]|[^"\\])*")(\s*)(:)`, chroma.ByGroups(chroma.NameTag, chroma.Text, chroma.Punctuation), nil),
			rule(`"(\\[\s\S]|[^"\\])*"`, chroma.LiteralStringDouble, nil),
			rule(`-?\d+(\.\d+)?([eE][+-]?\d+)?`, chroma.LiteralNumber, nil),
			rule(chroma.Words(`\b`, `\b`, "true", "false", "null"), chroma.KeywordConstant, nil),
			rule(`[{}\[\],:]`, chroma.Punctuation, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func yamlLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "yaml", Aliases: []string{"yaml", "yml"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\n`, chroma.Text, nil),
			rule(`#[^\n]*`, chroma.CommentSingle, nil),
			rule(`^(\s*)(-\s+)?([^\s:#'"][^:#\n]*?|"[^"\n]*"|'[^'\n]*')(\s*)(:)(?=\s|$)`, chroma.ByGroups(chroma.Text, chroma.Punctuation, chroma.NameTag, chroma.Text, chroma.Punctuation), nil),
			rule(`^(\s*)(-)(?=\s|$)`, chroma.ByGroups(chroma.Text, chroma.Punctuation), nil),
			rule(`^(---|\.\.\.)$`, chroma.Punctuation, nil),
			rule(`"(\\[\s\S]|[^"\\])*"`, chroma.LiteralStringDouble, nil),
			rule(`'[^']*'`, chroma.LiteralStringSingle, nil),
			rule(chroma.Words(`\b`, `\b`, "true", "false", "null", "yes", "no", "on", "off"), chroma.KeywordConstant, nil),
			rule(`-?\d+(\.\d+)?\b`, chroma.LiteralNumber, nil),
			rule(`[&*][\w-]+|!![\w]+`, chroma.NameVariable, nil),
			rule(`[|>][-+]?`, chroma.Punctuation, nil),
			rule(`[\[\]{},]`, chroma.Punctuation, nil),
			rule(`[^\n#\[\]{},"']+`, chroma.LiteralString, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func tomlLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "toml", Aliases: []string{"toml", "ini", "cfg", "conf", "properties", "env", "dotenv"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\n`, chroma.Text, nil),
			rule(`\s+`, chroma.Text, nil),
			rule(`[#;][^\n]*`, chroma.CommentSingle, nil),
			rule(`^(\s*)(\[\[?[^\]\n]*\]\]?)`, chroma.ByGroups(chroma.Text, chroma.Keyword), nil),
			rule(`^(\s*)([\w.\-"']+)(\s*)(=)`, chroma.ByGroups(chroma.Text, chroma.NameAttribute, chroma.Text, chroma.Operator), nil),
			rule(`"""[\s\S]*?"""|"(\\.|[^"\\\n])*"`, chroma.LiteralStringDouble, nil),
			rule(`'''[\s\S]*?'''|'[^'\n]*'`, chroma.LiteralStringSingle, nil),
			rule(chroma.Words(`\b`, `\b`, "true", "false"), chroma.KeywordConstant, nil),
			rule(`[+-]?\d[\d_:.TZ+-]*\b`, chroma.LiteralNumber, nil),
			rule(`[\[\]{},=]`, chroma.Punctuation, nil),
			rule(`[^\s\[\]{},="'#;]+`, chroma.Text, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func diffLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "diff", Aliases: []string{"diff", "patch", "udiff"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`(\+\+\+|---)[^\n]*\n`, chroma.GenericStrong, nil),
			rule(`\+[^\n]*\n`, chroma.GenericInserted, nil),
			rule(`-[^\n]*\n`, chroma.GenericDeleted, nil),
			rule(`@@[^\n]*\n`, chroma.GenericSubheading, nil),
			rule(`(diff|index)[^\n]*\n`, chroma.GenericStrong, nil),
			rule(`[^\n]*\n`, chroma.Text, nil),
		}}
	})
}

func sqlLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "sql", Aliases: []string{"sql", "postgresql", "postgres", "mysql", "sqlite", "psql", "plpgsql"}, CaseInsensitive: true, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{"root": {
			rule(`\s+`, chroma.Text, nil),
			rule(`--[^\n]*`, chroma.CommentSingle, nil),
			rule(`/\*[\s\S]*?\*/`, chroma.CommentMultiline, nil),
			rule(`'(''|[^'])*'`, chroma.LiteralStringSingle, nil),
			rule(`"(""|[^"])*"`, chroma.LiteralStringName, nil),
			rule(chroma.Words(`\b`, `\b`, "select", "from", "where", "insert", "into", "values", "update", "set", "delete",
				"create", "table", "index", "view", "drop", "alter", "add", "column", "primary", "key", "foreign",
				"references", "join", "left", "right", "inner", "outer", "full", "cross", "on", "as", "and", "or",
				"not", "null", "is", "in", "exists", "between", "like", "order", "by", "group", "having",
				"limit", "offset", "union", "all", "distinct", "case", "when", "then", "else", "end", "begin",
				"commit", "rollback", "transaction", "default", "unique", "constraint", "returning", "with",
				"if", "cascade", "asc", "desc", "true", "false"), chroma.Keyword, nil),
			rule(chroma.Words(`\b`, `\b`, "int", "integer", "bigint", "smallint", "serial", "bigserial", "text", "varchar",
				"char", "boolean", "bool", "date", "timestamp", "timestamptz", "numeric", "decimal", "real",
				"float", "double", "blob", "json", "jsonb", "uuid", "bytea"), chroma.KeywordType, nil),
			rule(`([A-Za-z_]\w*)(\s*)(\()`, chroma.ByGroups(chroma.NameFunction, chroma.Text, chroma.Punctuation), nil),
			rule(`\d+(\.\d+)?`, chroma.LiteralNumber, nil),
			rule(`[A-Za-z_]\w*`, chroma.Name, nil),
			rule(`(<>|!=|<=|>=|\|\||::|[+\-*/%=<>])`, chroma.Operator, nil),
			rule(`[()\[\],;.]`, chroma.Punctuation, nil),
			rule(`.`, chroma.Text, nil),
		}}
	})
}

func markupLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{Name: "markup", Aliases: []string{"html", "xml", "svg", "xhtml", "vue", "plist"}, EnsureNL: true}, func() chroma.Rules {
		return chroma.Rules{
			"root": {
				rule(`<!--[\s\S]*?-->`, chroma.Comment, nil),
				rule(`<![^>]*>|<\?[\s\S]*?\?>`, chroma.CommentPreproc, nil),
				rule(`(<)(/?)([\w:.-]+)`, chroma.ByGroups(chroma.Punctuation, chroma.Punctuation, chroma.NameTag), chroma.Push("tag")),
				rule(`&[\w#]+;`, chroma.NameEntity, nil),
				rule(`[^<&]+`, chroma.Text, nil),
				rule(`.`, chroma.Text, nil),
			},
			"tag": {
				rule(`\s+`, chroma.Text, nil),
				rule(`([\w:.-]+)(\s*)(=)(\s*)`, chroma.ByGroups(chroma.NameAttribute, chroma.Text, chroma.Operator, chroma.Text), nil),
				rule(`"[^"]*"|'[^']*'`, chroma.LiteralString, nil),
				rule(`[\w:.-]+`, chroma.NameAttribute, nil),
				rule(`/?>`, chroma.Punctuation, chroma.Pop(1)),
				rule(`.`, chroma.Text, nil),
			},
		}
	})
}

// rule is a chroma rule: text matching pattern is emitted as t, then the
// lexer's state changes by m (nil: it stays).
func rule(pattern string, t chroma.Emitter, m chroma.Mutator) chroma.Rule {
	return chroma.Rule{Pattern: pattern, Type: t, Mutator: m}
}
