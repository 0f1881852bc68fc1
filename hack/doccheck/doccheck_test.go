package main

import (
	"reflect"
	"testing"
)

const page = "# Title\n\nSee [the lab](lab.md#the-lab-stand-ins) and [up](#a-b--c), not `[code](x.md)`.\n\n" +
	"## A b & c\n\n```console\n# netshift-lab lab up --name big \\\n    --nodes 10   # ten nodes\n" +
	"# export KUBECONFIG=$(netshift-lab lab kubeconfig)\n# kubectl -n netshift-system exec POD -- netshift portpool list\n" +
	"NODE  MESSAGE\nnode-1  drained (if netshift cordoned it)\n```\n\n" +
	"Run `netshift status -o json` or `netshift-system`; `netshift portpool list\\|show [--server ADDR]`.\n" +
	"```yaml\n# netshift does this\n```\n"

func TestScanFindsLinksAndEveryShownCommand(t *testing.T) {
	links, shown := Scan(page)
	if want := []Link{{3, "lab.md#the-lab-stand-ins"}, {3, "#a-b--c"}}; !reflect.DeepEqual(links, want) {
		t.Errorf("links %v, want %v", links, want)
	}
	var got [][]string
	for _, s := range shown {
		got = append(got, append([]string{s.Binary}, s.Args...))
	}
	want := [][]string{
		{"netshift-lab", "lab", "up", "--name", "big", "--nodes", "10"},
		{"netshift-lab", "lab", "kubeconfig"},
		{"netshift", "portpool", "list"},
		{"netshift", "status", "-o", "json"},
		{"netshift", "portpool", "list" + Alternative + "show", "[--server", "ADDR]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestSlugsAsGitHubMakesThem(t *testing.T) {
	s := Slugs("# Title\n## A b & c\n## Title\n```\n# not a heading\n```\n### `netshift status`: where a change stands\n")
	for _, want := range []string{"title", "a-b--c", "title-1", "netshift-status-where-a-change-stands"} {
		if !s[want] {
			t.Errorf("no anchor %q in %v", want, s)
		}
	}
	if s["not-a-heading"] {
		t.Error("a line in a code block is not a heading")
	}
}

const rootHelp = `Change the network

Usage:
  netshift [command]

Available Commands:
  operator    Run the operator
  status      Show where things stand

Flags:
  -h, --help                help for netshift
      --kubeconfig string   kubeconfig file
`

const statusHelp = `Usage:
  netshift status [flags]

Flags:
  -o, --output string   text or json
  -w, --watch duration  refresh

Global Flags:
      --kubeconfig string   kubeconfig file
`

func TestCheckResolvesSubcommandsAndFlags(t *testing.T) {
	b := &Binary{Name: "netshift", seen: map[string]Help{"": ParseHelp(rootHelp), "status": ParseHelp(statusHelp),
		"statuz": ParseHelp(rootHelp)}}
	for _, ok := range [][]string{{"status", "-o", "json"}, {"status", "--output=json", "--kubeconfig", "k"}, {"status", "[-w", "1s]"}} {
		if err := b.Check(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"statuz"}, {"status", "--colour"}, {"status", "-x"}, {"status" + Alternative + "bogus"}} {
		if err := b.Check(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
