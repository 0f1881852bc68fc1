package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// Help is one command's --help, as cobra prints it.
type Help struct {
	Path     string          // "lab up", from its Usage line (the binary's own name left out)
	Children map[string]bool // its listed subcommands
	Text     string
}

// ParseHelp reads cobra's help text.
func ParseHelp(text string) Help {
	h := Help{Children: map[string]bool{}, Text: text}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case "Usage:":
			if i+1 < len(lines) {
				h.Path = usagePath(lines[i+1])
			}
		case "Available Commands:", "Additional Commands:":
			for _, c := range lines[i+1:] {
				f := strings.Fields(c)
				if len(f) == 0 || !strings.HasPrefix(c, "  ") {
					break
				}
				h.Children[f[0]] = true
			}
		}
	}
	return h
}

// usagePath is the command path of a usage line below the binary: its words
// up to the first that is not a command's name ("[flags]", "NODE", "--name").
func usagePath(line string) string {
	words := strings.Fields(line)
	if len(words) == 0 {
		return ""
	}
	var path []string
	for _, w := range words[1:] {
		if !wordRE.MatchString(w) {
			break
		}
		path = append(path, w)
	}
	return strings.Join(path, " ")
}

var (
	wordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	flagRE = regexp.MustCompile(`^\[?(--?[a-zA-Z][a-zA-Z0-9-]*)`)
)

// HasFlag says whether the command's help lists a flag (its own or global).
func (h Help) HasFlag(flag string) bool {
	var re *regexp.Regexp
	if strings.HasPrefix(flag, "--") {
		re = regexp.MustCompile(`(?m)^\s+(-[a-zA-Z], )?` + regexp.QuoteMeta(flag) + `[\s=]`)
	} else {
		re = regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag) + `, --`)
	}
	return re.MatchString(h.Text)
}

// A Binary answers --help for a command path, each path asked once.
type Binary struct {
	Name string // as the docs call it
	Path string
	seen map[string]Help
}

func (b *Binary) help(args []string) (Help, error) {
	key := strings.Join(args, " ")
	if h, ok := b.seen[key]; ok {
		return h, nil
	}
	out, err := exec.Command(b.Path, append(append([]string{}, args...), "--help")...).CombinedOutput()
	if err != nil {
		return Help{}, fmt.Errorf("%s %s --help: %v: %s", b.Name, key, err, out)
	}
	h := ParseHelp(string(out))
	if b.seen == nil {
		b.seen = map[string]Help{}
	}
	b.seen[key] = h
	return h, nil
}

// Check resolves a shown command in the binary: each word that names a
// subcommand (a listed one, or a hidden one the binary answers for) goes
// down the tree; a word where the command has subcommands but none of that
// name is an error, as is a flag its help does not list.
func (b *Binary) Check(args []string) error {
	path := []string{}
	h, err := b.help(nil)
	if err != nil {
		return err
	}
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !wordRE.MatchString(w) {
			if alts := strings.Split(w, Alternative); len(alts) > 1 && len(h.Children) > 0 {
				for _, a := range alts { // "list|show|free": each must be a subcommand
					if !h.Children[a] {
						return fmt.Errorf("%s has no subcommand %q", strings.Join(append([]string{b.Name}, path...), " "), a)
					}
				}
				i = len(args) // the flags that follow belong to several commands: not checked
			}
			break
		}
		if len(h.Children) == 0 {
			break // a leaf: the rest are its arguments
		}
		next := append(append([]string{}, path...), w)
		if !h.Children[w] {
			hidden, err := b.help(next)
			if err != nil || hidden.Path != strings.Join(next, " ") {
				return fmt.Errorf("%s has no subcommand %q", strings.Join(append([]string{b.Name}, path...), " "), w)
			}
		}
		path = next
		if h, err = b.help(path); err != nil {
			return err
		}
	}
	for ; i < len(args); i++ {
		if args[i] == "--" {
			break // what follows is another program's command line
		}
		m := flagRE.FindStringSubmatch(args[i])
		if m == nil {
			continue
		}
		if !h.HasFlag(m[1]) {
			return fmt.Errorf("%s has no flag %s", strings.Join(append([]string{b.Name}, path...), " "), m[1])
		}
	}
	return nil
}
