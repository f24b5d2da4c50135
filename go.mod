module github.com/strata-hpc/strata

go 1.26.0

replace github.com/molecule-man/go-brrr => github.com/molecule-man/go-brrr v1.0.1

require github.com/valyala/fasthttp v1.77.0

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.0 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/tools v0.37.0 // indirect
)
