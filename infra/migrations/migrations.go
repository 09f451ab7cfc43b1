// Package migrations reads numbered SQL migration files ("0001_description.sql"), the form
// both the Postgres and the ClickHouse migration runners take.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Dir returns the directory "migrations" of embedded, the files a package embeds with
// //go:embed migrations, as the root Load reads.
func Dir(embedded fs.FS) fs.FS {
	sub, err := fs.Sub(embedded, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at compile time
	}
	return sub
}

// File is one numbered migration file.
type File struct {
	Version int
	Name    string // file name, e.g. 0001_command_side.sql
	SQL     string
}

// Load returns the *.sql files at the root of fsys ordered by version. A name that does not
// start with a positive number and an underscore, or two files with one version, is an error.
func Load(fsys fs.FS) ([]File, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []File
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: name must look like 0001_description.sql", e.Name())
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("%s and %s share version %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Name(), err)
		}
		out = append(out, File{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}
