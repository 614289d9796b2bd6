package console

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the pages; each is drawn inside templates/layout.html.
var pageNames = []string{"question", "list", "job", "error"}

type pages struct {
	byName map[string]*template.Template
}

// loadPages parses the pages; prefix is the path the console is served
// under behind a proxy ("" when at the root), for the stylesheet's link.
func loadPages(prefix string) (*pages, error) {
	funcs := template.FuncMap{
		"lines":  func(s string) []string { return strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") },
		"prefix": func() string { return prefix },
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

func (p *pages) execute(w io.Writer, name string, data any) error {
	t, ok := p.byName[name]
	if !ok {
		return fmt.Errorf("console: no page %q", name)
	}
	if err := t.ExecuteTemplate(w, "layout.html", data); err != nil {
		return fmt.Errorf("console: page %s: %w", name, err)
	}
	return nil
}

// handleStatic serves the embedded stylesheet and script.
func (c *Console) handleStatic(w http.ResponseWriter, r *http.Request) {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		c.handleNotFound(w, r)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/console/static/")
	if name == "" || strings.Contains(name, "/") {
		c.handleNotFound(w, r)
		return
	}
	data, err := fs.ReadFile(sub, name)
	if err != nil {
		c.handleNotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(data)
}

// staticExists reports whether name is one of the embedded static files.
func staticExists(name string) bool {
	if name == "" || strings.Contains(name, "/") {
		return false
	}
	_, err := fs.Stat(staticFS, "static/"+name)
	return err == nil
}
