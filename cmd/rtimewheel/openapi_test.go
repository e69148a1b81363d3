package main

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// openAPIRoutes lists "METHOD /path" for every operation under `paths:` of
// an OpenAPI document. It reads only the layout api/openapi.yaml uses: paths
// at two spaces of indent, their operations at four.
func openAPIRoutes(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	operations := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}
	var routes []string
	inPaths, current := false, ""
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case indent == 0:
			inPaths = trimmed == "paths:"
		case !inPaths:
		case indent == 2 && strings.HasSuffix(trimmed, ":"):
			current = strings.Trim(strings.TrimSuffix(trimmed, ":"), `"'`)
		case indent == 4 && strings.HasSuffix(trimmed, ":") && operations[strings.TrimSuffix(trimmed, ":")]:
			routes = append(routes, strings.ToUpper(strings.TrimSuffix(trimmed, ":"))+" "+current)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return routes
}

func TestRoutesMatchOpenAPI(t *testing.T) {
	documented := openAPIRoutes(t, "../../api/openapi.yaml")
	var served []string
	for _, e := range endpoints() {
		served = append(served, e.Pattern())
	}
	for _, route := range served {
		if !slices.Contains(documented, route) {
			t.Errorf("%s is served but not in api/openapi.yaml", route)
		}
	}
	for _, route := range documented {
		if !slices.Contains(served, route) {
			t.Errorf("%s is in api/openapi.yaml but not served", route)
		}
	}
	if len(documented) < 10 {
		t.Errorf("the parser found only %d routes in api/openapi.yaml: %v", len(documented), documented)
	}
}
