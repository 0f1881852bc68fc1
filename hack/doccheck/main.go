// Command doccheck checks the project's Markdown pages, as the static test
// tier runs it: every relative link resolves (its file, and its #anchor to a
// heading of that page), and every netshift or netshift-lab command a page
// shows exists in that binary, with the flags it is shown with.
//
//	go run ./hack/doccheck --netshift bin/netshift --netshift-lab bin/netshift-lab README.md docs/*.md
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	product := flag.String("netshift", "", "the product binary")
	labBuild := flag.String("netshift-lab", "", "the lab build")
	flag.Parse()
	if *product == "" || *labBuild == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: doccheck --netshift BIN --netshift-lab BIN PAGE...")
		os.Exit(2)
	}
	binaries := map[string]*Binary{
		"netshift":     {Name: "netshift", Path: *product},
		"netshift-lab": {Name: "netshift-lab", Path: *labBuild},
	}
	var problems []string
	for _, page := range flag.Args() {
		problems = append(problems, checkPage(page, binaries)...)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("doccheck: %d problems in the docs\n", len(problems))
		os.Exit(1)
	}
}

func checkPage(page string, binaries map[string]*Binary) []string {
	data, err := os.ReadFile(page)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	links, shown := Scan(string(data))
	for _, l := range links {
		if err := checkLink(page, string(data), l.Target); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: link %s: %v", page, l.Line, l.Target, err))
		}
	}
	for _, s := range shown {
		if err := binaries[s.Binary].Check(s.Args); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v (in: %s)", page, s.Line, err, s.Context))
		}
	}
	return problems
}

func checkLink(page, text, target string) error {
	path, anchor, _ := strings.Cut(target, "#")
	if path != "" {
		path = filepath.Join(filepath.Dir(page), path)
		info, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("no such file")
		}
		if anchor == "" || info.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text = string(data)
	}
	if anchor != "" && !Slugs(text)[anchor] {
		return fmt.Errorf("no heading makes the anchor #%s", anchor)
	}
	return nil
}
