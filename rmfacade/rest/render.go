package rest

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// wantsXML reports whether the client prefers XML, as Jersey decides from
// the Accept header: the first of JSON or XML it lists wins.
func wantsXML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
		switch mt {
		case "application/json":
			return false
		case "application/xml", "text/xml":
			return true
		}
	}
	return false
}

// write renders jsonV as JSON or xmlV as XML.
func write(w http.ResponseWriter, r *http.Request, status int, jsonV, xmlV any) {
	if wantsXML(r) {
		w.Header().Set("Content-Type", "application/xml;charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, xml.Header)
		xml.NewEncoder(w).Encode(xmlV)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(jsonV)
}

// restError is an error with its HTTP status and YARN exception names.
type restError struct {
	status    int
	exception string
	class     string
	message   string
}

func (e *restError) Error() string { return e.message }

func badRequest(format string, args ...any) *restError {
	return &restError{status: http.StatusBadRequest, exception: "BadRequestException",
		class: "org.apache.hadoop.yarn.webapp.BadRequestException", message: sprintf(format, args...)}
}

func notFound(format string, args ...any) *restError {
	return &restError{status: http.StatusNotFound, exception: "NotFoundException",
		class: "org.apache.hadoop.yarn.webapp.NotFoundException", message: "java.lang.Exception: " + sprintf(format, args...)}
}

func unauthenticated() *restError {
	return &restError{status: http.StatusForbidden, exception: "AuthorizationException",
		class: "org.apache.hadoop.security.authorize.AuthorizationException", message: "Unable to obtain user name, user not authenticated"}
}

// writeError renders err as YARN's RemoteException body.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var re *restError
	if !errors.As(err, &re) {
		ye := yarnerr.As(err)
		simple := ye.Class[strings.LastIndexByte(ye.Class, '.')+1:]
		re = &restError{status: http.StatusInternalServerError, exception: simple, class: ye.Class, message: ye.Message}
		switch ye.Kind {
		case yarnerr.KindNotFound:
			re = notFound("%s", ye.Message)
		case yarnerr.KindBadRequest:
			re.status = http.StatusBadRequest
		case yarnerr.KindForbidden:
			re.status = http.StatusForbidden
		case yarnerr.KindConflict:
			re.status = http.StatusConflict
		}
	}
	body := remoteException{Exception: re.exception, Message: re.message, JavaClassName: re.class}
	write(w, r, re.status, remoteExceptionResponse{RemoteException: body}, body)
}

// maxBody bounds request bodies; submissions are a few KiB.
const maxBody = 4 << 20

// decode reads a JSON or XML body, by Content-Type.
func decode(r *http.Request, v any) error {
	body := http.MaxBytesReader(nil, r.Body, maxBody)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	switch mt {
	case "application/xml", "text/xml":
		err = xml.NewDecoder(body).Decode(v)
	case "application/json", "":
		err = json.NewDecoder(body).Decode(v)
	default:
		return &restError{status: http.StatusUnsupportedMediaType, exception: "WebApplicationException",
			class: "javax.ws.rs.WebApplicationException", message: "Unsupported media type " + mt}
	}
	if err != nil {
		return badRequest("Could not parse the request body: %v", err)
	}
	return nil
}
