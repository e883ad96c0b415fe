package demo

import (
	"strings"
	"time"
)

// fileKind is one kind of file people upload: it builds a filename and
// gives the median size and spread of such files.
type fileKind struct {
	weight int
	build  func(g *Generator, created time.Time) (name string, median, sigma float64)
}

// namedFile is a filename with its typical size.
type namedFile struct {
	name          string
	median, sigma float64
}

const (
	kB = 1000.0
	mB = 1000 * kB
)

// fileKinds are the kinds of files, with their share of all files.
var fileKinds = []fileKind{
	{18, cameraPhoto},
	{20, officeDocument},
	{10, invoice},
	{10, webImage},
	{8, screenshot},
	{7, dataExport},
	{6, media},
	{6, textFile},
	{5, backup},
	{4, internationalName},
}

var fileKindPicker = pickerOf(fileKinds, func(k fileKind) int { return k.weight })

// cameraPhoto names a photo the way cameras and phones do: "IMG_4821.jpg".
func cameraPhoto(g *Generator, _ time.Time) (string, float64, float64) {
	r := g.files
	b := append(g.buf[:0], [...]string{"IMG_", "IMG_", "DSC_", "DSCN"}[r.IntN(4)]...)
	b = appendPadded(b, r.IntN(10000), 4)
	b = append(b, [...]string{".jpg", ".jpg", ".JPG", ".HEIC"}[r.IntN(4)]...)
	g.buf = b
	return string(b), 2.8 * mB, 0.4
}

// officeDocuments are the stems and typical sizes of documents people share.
var officeDocuments = []namedFile{
	{"quarterly-report.xlsx", 90 * kB, 0.8},
	{"budget-2026.xlsx", 60 * kB, 0.7},
	{"meeting-notes.docx", 35 * kB, 0.6},
	{"project-proposal.docx", 120 * kB, 0.8},
	{"roadmap.pptx", 4 * mB, 0.9},
	{"sales-deck.pptx", 8 * mB, 0.8},
	{"contract-signed.pdf", 400 * kB, 0.7},
	{"onboarding-guide.pdf", 1.5 * mB, 0.8},
	{"brand-guidelines.pdf", 12 * mB, 0.7},
	{"press-kit.zip", 45 * mB, 0.9},
	{"architecture.drawio", 150 * kB, 0.7},
	{"wireframes.fig", 6 * mB, 1.0},
}

// versionSuffixes are what people add to a document's name as it evolves;
// the empty ones keep most names plain.
var versionSuffixes = []string{"", "", "", "", "", "-v2", "-v3", "-final", "-draft", " (1)", "_copy"}

// officeDocument names a shared document: "quarterly-report-v2.xlsx".
func officeDocument(g *Generator, _ time.Time) (string, float64, float64) {
	r := g.files
	d := officeDocuments[r.IntN(len(officeDocuments))]
	dot := strings.LastIndexByte(d.name, '.') // every name has an extension
	b := append(g.buf[:0], d.name[:dot]...)
	b = append(b, versionSuffixes[r.IntN(len(versionSuffixes))]...)
	b = append(b, d.name[dot:]...)
	g.buf = b
	return string(b), d.median, d.sigma
}

// invoice names a monthly invoice: "invoice-2026-10.pdf".
func invoice(g *Generator, created time.Time) (string, float64, float64) {
	y, m, _ := created.Date()
	b := append(g.buf[:0], "invoice-"...)
	b = appendPadded(b, y, 4)
	b = append(b, '-')
	b = appendPadded(b, int(m), 2)
	b = append(b, ".pdf"...)
	g.buf = b
	return string(b), 120 * kB, 0.5
}

// webImages are the images a website's source tree holds.
var webImages = []namedFile{
	{"hero@2x.webp", 180 * kB, 0.5},
	{"hero.webp", 90 * kB, 0.5},
	{"logo.svg", 6 * kB, 0.6},
	{"logo-dark.png", 25 * kB, 0.5},
	{"favicon.ico", 15 * kB, 0.3},
	{"og-image-1200x630.png", 250 * kB, 0.5},
	{"banner-summer-sale.jpg", 350 * kB, 0.5},
	{"thumbnail@3x.webp", 60 * kB, 0.5},
	{"avatar-placeholder.png", 12 * kB, 0.4},
	{"icon-sprite.svg", 40 * kB, 0.5},
}

// webImage picks a website image: "hero@2x.webp".
func webImage(g *Generator, _ time.Time) (string, float64, float64) {
	f := webImages[g.files.IntN(len(webImages))]
	return f.name, f.median, f.sigma
}

// screenshot names a screenshot the way macOS does:
// "Screenshot 2026-11-02 at 14.03.07.png".
func screenshot(g *Generator, created time.Time) (string, float64, float64) {
	h, m, s := created.Clock()
	b := append(g.buf[:0], "Screenshot "...)
	b = appendDate(b, created)
	b = append(b, " at "...)
	b = appendPadded(b, h, 2)
	b = append(b, '.')
	b = appendPadded(b, m, 2)
	b = append(b, '.')
	b = appendPadded(b, s, 2)
	b = append(b, ".png"...)
	g.buf = b
	return string(b), 600 * kB, 0.6
}

// dataExport names a dated export: "orders-export-2026-11-02.csv".
func dataExport(g *Generator, created time.Time) (string, float64, float64) {
	r := g.files
	b := append(g.buf[:0], [...]string{"orders", "users", "events", "analytics", "transactions"}[r.IntN(5)]...)
	b = append(b, "-export-"...)
	b = appendDate(b, created)
	ext := [...]string{".csv", ".csv", ".json", ".ndjson", ".parquet"}[r.IntN(5)]
	b = append(b, ext...)
	g.buf = b
	return string(b), 2 * mB, 1.4
}

// media names a recording: "recording-0042.mp4", "podcast-ep-17.mp3".
func media(g *Generator, _ time.Time) (string, float64, float64) {
	r := g.files
	b := g.buf[:0]
	var median, sigma float64
	switch r.IntN(3) {
	case 0:
		b = append(b, "recording-"...)
		b = appendPadded(b, r.IntN(1000), 4)
		b = append(b, ".mp4"...)
		median, sigma = 80*mB, 1.0
	case 1:
		b = append(b, "podcast-ep-"...)
		b = appendPadded(b, 1+r.IntN(250), 1)
		b = append(b, ".mp3"...)
		median, sigma = 40*mB, 0.5
	default:
		b = append(b, "product-demo-"...)
		b = appendPadded(b, 1+r.IntN(40), 1)
		b = append(b, ".mov"...)
		median, sigma = 250*mB, 0.8
	}
	g.buf = b
	return string(b), median, sigma
}

// textFiles are small text files of a project.
var textFiles = []namedFile{
	{"README.md", 4 * kB, 0.8},
	{"notes.txt", 2 * kB, 1.0},
	{"config.yaml", 1.5 * kB, 0.6},
	{"CHANGELOG.md", 20 * kB, 0.8},
	{"robots.txt", 200, 0.5},
	{"LICENSE", 11 * kB, 0.1},
	{".env.example", 600, 0.4},
}

// textFile picks a small text file, or a dated log: "app-2026-11-02.log".
func textFile(g *Generator, created time.Time) (string, float64, float64) {
	r := g.files
	if r.IntN(3) == 0 {
		b := append(g.buf[:0], "app-"...)
		b = appendDate(b, created)
		b = append(b, ".log"...)
		g.buf = b
		return string(b), 5 * mB, 1.2
	}
	f := textFiles[r.IntN(len(textFiles))]
	return f.name, f.median, f.sigma
}

// backup names a dated archive: "backup-2026-11-02.tar.gz".
func backup(g *Generator, created time.Time) (string, float64, float64) {
	r := g.files
	b := append(g.buf[:0], [...]string{"backup-", "backup-", "db-dump-", "site-"}[r.IntN(4)]...)
	b = appendDate(b, created)
	b = append(b, [...]string{".tar.gz", ".tar.gz", ".sql.gz", ".zip"}[r.IntN(4)]...)
	g.buf = b
	return string(b), 400 * mB, 1.0
}

// internationalNames are files named in the languages of the people who
// upload them; they keep every client honest about UTF-8.
var internationalNames = []namedFile{
	{"Überweisung.pdf", 90 * kB, 0.4},
	{"写真.jpg", 2.5 * mB, 0.4},
	{"résumé.docx", 45 * kB, 0.4},
	{"Präsentation.pptx", 5 * mB, 0.8},
	{"Отчёт за квартал.xlsx", 80 * kB, 0.6},
	{"会議メモ.txt", 3 * kB, 0.7},
	{"café-menü.pdf", 300 * kB, 0.5},
	{"계약서.pdf", 500 * kB, 0.6},
	{"Αρχείο.zip", 20 * mB, 1.0},
	{"naïve-bayes.ipynb", 400 * kB, 0.8},
	{"São Paulo 🌆.heic", 2.2 * mB, 0.4},
}

// internationalName picks a file with a non-ASCII name: "Überweisung.pdf".
func internationalName(g *Generator, _ time.Time) (string, float64, float64) {
	f := internationalNames[g.files.IntN(len(internationalNames))]
	return f.name, f.median, f.sigma
}
