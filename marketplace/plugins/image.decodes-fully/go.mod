module image.decodes-fully

go 1.19

require lockd/sdk v0.0.0

replace lockd/sdk => ../../../client/go
