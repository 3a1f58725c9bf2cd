module file.has-trailing-data

go 1.19

require lockd/sdk v0.0.0

replace lockd/sdk => ../../../client/go
