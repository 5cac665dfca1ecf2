package cgroups

// InterceptWrites makes f call fn before each file write it makes, with
// the file's name and the value; an error from fn stands for the kernel's
// answer and the write does not happen.
func InterceptWrites(f *FS, fn func(name, value string) error) {
	next := f.writeFile
	f.writeFile = func(name, value string) error {
		if err := fn(name, value); err != nil {
			return err
		}
		return next(name, value)
	}
}

// FileError is fileError, for testing the errno mapping directly.
var FileError = fileError
