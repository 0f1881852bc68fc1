package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// outputFormat is the value of a command's -o: text for people, json or
// yaml (the same object) for programs.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
	outputYAML outputFormat = "yaml"
)

var outputFormats = []outputFormat{outputText, outputJSON, outputYAML}

// addOutputFlag gives a command -o/--output into o (default text). A bad
// value is refused as the flags are parsed, so it is a usage error (exit 2)
// like any bad flag value, naming the flag and the allowed values.
func addOutputFlag(f *pflag.FlagSet, o *outputFormat) {
	*o = outputText
	f.VarP(o, "output", "o", "output format: text, json or yaml")
}

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "format" }

func (o *outputFormat) Set(s string) error {
	if !slices.Contains(outputFormats, outputFormat(s)) {
		return fmt.Errorf("want text, json or yaml")
	}
	*o = outputFormat(s)
	return nil
}

// write prints v as -o says: text through the command's own writer, json or
// yaml as v itself.
func (o outputFormat) write(w io.Writer, v any, text func(io.Writer) error) error {
	switch o {
	case outputJSON:
		return writeJSON(w, v)
	case outputYAML:
		return writeYAML(w, v)
	}
	return text(w)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeYAML prints v as YAML: its JSON form (the same field names and
// omissions as -o json) written as YAML.
func writeYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("write YAML: %w", err)
	}
	_, err = w.Write(b)
	return err
}
