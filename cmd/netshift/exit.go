package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes, stable for scripts (docs/commands.md, "Exit codes").
const (
	exitOK      = 0
	exitFailed  = 1 // the cluster (or the pool API) could not be talked to, or an operation failed
	exitUsage   = 2 // the command line or an input it names was refused
	exitProblem = 3 // netshift status reports something that needs a person
)

// usageError marks bad usage or bad input: a flag, an argument or a file a
// flag names that netshift refuses before it does anything (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is fmt.Errorf for bad usage or input (exit 2). Name the flag or
// argument and the allowed values.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// asUsage marks an error of a validation (an Options.Validate, a parser) as
// bad usage or input (exit 2); nil stays nil.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

// problemsError is a command that ran but reports something that needs a
// person (exit 3): the report itself went to stdout.
type problemsError struct{ problems []string }

func (e problemsError) Error() string {
	return fmt.Sprintf("%d problem(s): %s", len(e.problems), strings.Join(e.problems, "; "))
}

// problems is nil for none, else a problemsError.
func problems(p []string) error {
	if len(p) == 0 {
		return nil
	}
	return problemsError{p}
}

// exitCode is the process's exit code for a command's error.
func exitCode(err error) int {
	var usage usageError
	var reported problemsError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &reported):
		return exitProblem
	}
	return exitFailed
}
