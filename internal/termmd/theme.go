package termmd

import (
	"strconv"
	"strings"

	"github.com/alecthomas/chroma/v2"
)

// theme holds a style's colours: xterm-256 indices for the document (as
// Glamour's dark and light styles set them) and chroma style entries for
// code (Glamour's "charm" code theme of each style).
type theme struct {
	text, heading, h6 string // foreground indices
	h1fg, h1bg        string
	hr                string
	link, linkText    string
	image, imageText  string
	codeFg, codeBg    string
	codeBlock         string // code without a known language
	chroma            chroma.StyleEntries
}

// dark and light are built on use: a package-level theme would be
// initialised by every command of the binary, not only by the TUI.
func themeNamed(name string) theme {
	if name == "light" {
		return theme{
			text: "234", heading: "27", h6: "27", h1fg: "228", h1bg: "63", hr: "249",
			link: "36", linkText: "29", image: "205", imageText: "243",
			codeFg: "203", codeBg: "254", codeBlock: "242",
			chroma: chroma.StyleEntries{
				chroma.Text:                "#2A2A2A",
				chroma.Error:               "#F1F1F1 bg:#FF5555",
				chroma.Comment:             "#8D8D8D",
				chroma.CommentPreproc:      "#FF875F",
				chroma.Keyword:             "#279EFC",
				chroma.KeywordReserved:     "#FF5FD2",
				chroma.KeywordNamespace:    "#FB406F",
				chroma.KeywordType:         "#7049C2",
				chroma.Operator:            "#FF2626",
				chroma.Punctuation:         "#FA7878",
				chroma.NameBuiltin:         "#0A1BB1",
				chroma.NameTag:             "#581290",
				chroma.NameAttribute:       "#8362CB",
				chroma.NameClass:           "#212121 underline bold",
				chroma.NameConstant:        "#581290",
				chroma.NameDecorator:       "#A3A322",
				chroma.NameFunction:        "#019F57",
				chroma.LiteralNumber:       "#22CCAE",
				chroma.LiteralString:       "#7E5B38",
				chroma.LiteralStringEscape: "#00AEAE",
				chroma.GenericDeleted:      "#FD5B5B",
				chroma.GenericEmph:         "italic",
				chroma.GenericInserted:     "#00D787",
				chroma.GenericStrong:       "bold",
				chroma.GenericSubheading:   "#777777",
			},
		}
	}
	return theme{
		text: "252", heading: "39", h6: "35", h1fg: "228", h1bg: "63", hr: "240",
		link: "30", linkText: "35", image: "212", imageText: "243",
		codeFg: "203", codeBg: "236", codeBlock: "244",
		chroma: chroma.StyleEntries{
			chroma.Text:                "#C4C4C4",
			chroma.Error:               "#F1F1F1 bg:#F05B5B",
			chroma.Comment:             "#676767",
			chroma.CommentPreproc:      "#FF875F",
			chroma.Keyword:             "#00AAFF",
			chroma.KeywordReserved:     "#FF5FD2",
			chroma.KeywordNamespace:    "#FF5F87",
			chroma.KeywordType:         "#6E6ED8",
			chroma.Operator:            "#EF8080",
			chroma.Punctuation:         "#E8E8A8",
			chroma.Name:                "#C4C4C4",
			chroma.NameBuiltin:         "#FF8EC7",
			chroma.NameTag:             "#B083EA",
			chroma.NameAttribute:       "#7A7AE6",
			chroma.NameClass:           "#F1F1F1 underline bold",
			chroma.NameDecorator:       "#FFFF87",
			chroma.NameFunction:        "#00D787",
			chroma.LiteralNumber:       "#6EEFC0",
			chroma.LiteralString:       "#C69669",
			chroma.LiteralStringEscape: "#AFFFD7",
			chroma.GenericDeleted:      "#FD5B5B",
			chroma.GenericEmph:         "italic",
			chroma.GenericInserted:     "#00D787",
			chroma.GenericStrong:       "bold",
			chroma.GenericSubheading:   "#777777",
		},
	}
}

// style is how a run of text looks.
type style struct {
	fg, bg                           string // xterm-256 indices, "" for none
	bold, italic, underline, crossed bool
}

// sgr returns the run's Select Graphic Rendition parameters, the colour
// first.
func (s style) sgr() string {
	var p []string
	if s.fg != "" {
		p = append(p, "38;5;"+s.fg)
	}
	if s.bg != "" {
		p = append(p, "48;5;"+s.bg)
	}
	for _, f := range []struct {
		on bool
		p  string
	}{{s.bold, "1"}, {s.italic, "3"}, {s.underline, "4"}, {s.crossed, "9"}} {
		if f.on {
			p = append(p, f.p)
		}
	}
	return strings.Join(p, ";")
}

// paint wraps text in the style, resetting it after.
func paint(sgr, text string) string {
	if sgr == "" || text == "" {
		return text
	}
	return "\x1b[" + sgr + "m" + text + "\x1b[m"
}

// xterm256 returns the palette index nearest to c, by the distance chroma
// uses for its terminal256 formatter, so that code keeps the colours it
// had when Glamour highlighted it.
func xterm256(c chroma.Colour) string {
	best, bestD := 16, -1.0
	for i := 16; i < 256; i++ {
		if d := paletteColour(i).Distance(c); bestD < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	return strconv.Itoa(best)
}

// paletteColour is the xterm colour of index i (16..255): a 6×6×6 cube,
// then 24 greys.
func paletteColour(i int) chroma.Colour {
	if i >= 232 {
		g := 8 + 10*(i-232)
		return chroma.NewColour(uint8(g), uint8(g), uint8(g))
	}
	i -= 16
	level := func(v int) uint8 {
		if v == 0 {
			return 0
		}
		return uint8(55 + 40*v)
	}
	return chroma.NewColour(level(i/36), level(i/6%6), level(i%6))
}
