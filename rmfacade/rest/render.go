package rest

import (
	"errors"
	"net/http"
	"strings"

	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// restError is an error with the RM's exception for it.
type restError struct {
	class   string
	message string
}

func (e *restError) Error() string { return e.message }

func badRequest(format string, args ...any) *restError {
	return &restError{class: dao.ClassBadRequestException, message: sprintf(format, args...)}
}

func notFound(format string, args ...any) *restError {
	return &restError{class: dao.ClassNotFoundException, message: "java.lang.Exception: " + sprintf(format, args...)}
}

// writeError renders err as the RM's RemoteException body with the status
// Hadoop 3.4's exception mapping gives its class.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var re *restError
	var read *dao.RequestError
	switch {
	case errors.As(err, &read):
		read.Write(w, r)
		return
	case errors.As(err, &re):
	default:
		// The RM's web services turn the client protocol's exceptions into
		// its web ones: not found, bad request, forbidden.
		ye := yarnerr.As(err)
		switch ye.Kind {
		case yarnerr.KindNotFound:
			re = notFound("%s", ye.Message)
		case yarnerr.KindBadRequest, yarnerr.KindConflict:
			re = badRequest("%s", ye.Message)
		case yarnerr.KindForbidden:
			re = &restError{class: dao.ClassForbiddenException, message: ye.Message}
		default:
			re = &restError{class: ye.Class, message: ye.Message}
		}
	}
	simple := re.class[strings.LastIndexByte(re.class, '.')+1:]
	dao.Error(w, r, dao.StatusFor(re.class), simple, re.class, re.message)
}
