package graph

import (
	"regexp"
	"strconv"
)

// fileNamePattern is the CVO's file-name rule: `0000_<run level>_<component>_`,
// where the component is one or more alphanumeric words joined by dashes.
var fileNamePattern = regexp.MustCompile(`^0000_([0-9]+)_([a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*)_`)

// ParseFileName reads the run level and component from a manifest's base
// file name. ok is false, the run level -1 and the component empty when the
// name does not follow the rule; such a task is ordered on its own.
// It lives here so that the loader and the tests agree on one rule.
func ParseFileName(name string) (runLevel int, component string, ok bool) {
	m := fileNamePattern.FindStringSubmatch(name)
	if m == nil {
		return -1, "", false
	}
	level, err := strconv.Atoi(m[1])
	if err != nil || level < 0 {
		return -1, "", false
	}
	return level, m[2], true
}

// NewTask builds a task from its payload position and file name, parsing
// the run level and component with ParseFileName.
func NewTask(index int, file string) *Task {
	level, component, _ := ParseFileName(file)
	return &Task{Index: index, File: file, RunLevel: level, Component: component}
}
