package main

import (
	"regexp"
	"strings"
)

// A Link is a relative link of a page, where it stands.
type Link struct {
	Line   int
	Target string // path, with its #anchor if any
}

// A Shown is a command line a page shows, where it stands.
type Shown struct {
	Line    int
	Binary  string // netshift or netshift-lab
	Args    []string
	Context string // the line as the page has it
}

// shellBlocks are the fenced blocks whose lines may be commands, by info string.
var shellBlocks = map[string]bool{"": true, "console": true, "sh": true, "shell": true, "bash": true}

// Alternative stands between the choices of a word such as list|show|free
// (a "|" with no space around it, which is no shell pipe).
const Alternative = "¦"

var alternatives = regexp.MustCompile(`(\S)\\?\|(\S)`)

var (
	linkRE = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	spanRE = regexp.MustCompile("`([^`]+)`")
	// A command: the binary's name at the start or after a shell separator,
	// then everything up to the next separator.
	commandRE = regexp.MustCompile(`(?:^|[\s$(|;&])(netshift(?:-lab)?)[ \t]+([^|;&)]*)`)
	// A line of a fenced block that is a command: after a prompt, or a
	// netshift command itself.
	consoleLine = regexp.MustCompile(`^([#$] |netshift(-lab)? )`)
	// A trailing comment in a console block: "   # what it does".
	commentRE = regexp.MustCompile(`\s{2,}#.*$|\s#\s.*$`)
)

// Scan reads a page: its relative links (outside code) and the commands it
// shows (in fenced blocks, and in inline code spans that begin with one).
func Scan(text string) (links []Link, shown []Shown) {
	lines := strings.Split(text, "\n")
	inFence, shell := false, false
	for i := 0; i < len(lines); i++ {
		line, n := lines[i], i+1
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
			inFence = !inFence
			shell = inFence && shellBlocks[strings.TrimPrefix(t, "```")]
			continue
		}
		if inFence && !shell {
			continue // YAML, JSON, Go: no command lines
		}
		if inFence {
			// A console line (a prompt, or the command itself; output and diagrams are
			// neither): drop its prompt, join its continuations, drop its comment.
			cmd := strings.TrimSpace(line)
			if !consoleLine.MatchString(cmd) {
				continue
			}
			for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
			}
			cmd = strings.TrimPrefix(strings.TrimPrefix(cmd, "# "), "$ ")
			shown = append(shown, commandsIn(commentRE.ReplaceAllString(cmd, ""), n, line)...)
			continue
		}
		for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
			if strings.HasPrefix(m[1], "netshift ") || strings.HasPrefix(m[1], "netshift-lab ") {
				shown = append(shown, commandsIn(m[1], n, line)...)
			}
		}
		for _, m := range linkRE.FindAllStringSubmatch(spanRE.ReplaceAllString(line, ""), -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			links = append(links, Link{Line: n, Target: t})
		}
	}
	return links, shown
}

func commandsIn(s string, line int, context string) []Shown {
	var out []Shown
	for alternatives.MatchString(s) { // overlapping: a|b|c
		s = alternatives.ReplaceAllString(s, "${1}"+Alternative+"${2}")
	}
	for _, m := range commandRE.FindAllStringSubmatch(s, -1) {
		args := strings.Fields(m[2])
		if len(args) == 0 {
			continue
		}
		out = append(out, Shown{Line: line, Binary: m[1], Args: args, Context: strings.TrimSpace(context)})
	}
	return out
}

// Slugs are the anchors a page's headings get (as GitHub makes them).
func Slugs(text string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && isLetter(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := count[slug]; n > 0 {
			out[slug+"-"+itoa(n)] = true
		} else {
			out[slug] = true
		}
		count[slug]++
	}
	return out
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
