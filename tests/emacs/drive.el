;;; drive.el --- a headless Emacs with eglot through the whole fsr-lsp flow  -*- lexical-binding: t -*-
;; Open a .cu file, wait for the diagnostics, run "Optimize" through eglot's own code-action
;; command, wait for the verified win, choose "Apply FSR rewrite" the same way, save.
;; eglot 1.9 never resolves code actions: it applies the action's edit, so this is the path
;; that proves the server gives such clients the edit itself.
;; Configuration comes as JSON in $FSR_EMACS_CONFIG; the steps go to its "result" path.
(require 'cl-lib)
(require 'json)
(require 'eglot)

(defvar fsr-config
  (with-temp-buffer
    (insert-file-contents (getenv "FSR_EMACS_CONFIG"))
    (json-parse-buffer :object-type 'plist :array-type 'list :false-object :json-false :null-object nil)))
(defvar fsr-steps nil)
(defvar fsr-diagnostics (make-hash-table :test 'equal))

(defun fsr-step (name ok)
  (push (list :name name :ok (if ok t :json-false)) fsr-steps)
  ok)

(defun fsr-finish ()
  (with-temp-file (plist-get fsr-config :result)
    (insert (json-encode (vconcat (reverse fsr-steps)))))
  (kill-emacs 0))

(defun fsr-wait (seconds predicate)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (funcall predicate)))

(defun fsr-has (code)
  (let ((uri (eglot--path-to-uri (plist-get fsr-config :file))))
    (seq-find (lambda (d) (equal (plist-get d :code) code)) (gethash uri fsr-diagnostics))))

(defun fsr-choose (prefix)
  "Run eglot's own code-action command at point, picking the action whose title starts with PREFIX."
  (let ((last-nonmenu-event 13)  ; a key, not a mouse click: eglot asks with completing-read
        (offered nil))
    (cl-letf (((symbol-function 'completing-read)
               (lambda (_prompt collection &rest _)
                 (setq offered (mapcar #'car collection))
                 (or (cl-find-if (lambda (title) (string-prefix-p prefix title)) offered) ""))))
      (condition-case err
          (progn (eglot-code-actions (point) nil nil t) offered)
        (error (message "code action %s failed: %S (offered %S)" prefix err offered) nil)))))

(advice-add 'eglot-handle-notification :before
            (lambda (_server method &rest params)
              (when (eq method 'textDocument/publishDiagnostics)
                (puthash (plist-get params :uri) (plist-get params :diagnostics) fsr-diagnostics))))

(dolist (pair (plist-get fsr-config :env))
  (setenv (car pair) (cadr pair)))
;; The README's set-up: a cuda-mode for .cu files, fsr-lsp as its server.
(define-derived-mode cuda-mode c++-mode "CUDA")
(add-to-list 'auto-mode-alist '("\\.cuh?\\'" . cuda-mode))
(setq eglot-server-programs
      `((cuda-mode . (,@(plist-get fsr-config :cmd) :initializationOptions ,(plist-get fsr-config :init_options)))))
(setq eglot-sync-connect t)

(find-file (plist-get fsr-config :file))
(unless (fsr-step "cuda-mode" (eq major-mode 'cuda-mode)) (fsr-finish))
(apply #'eglot--connect (eglot--guess-contact))
(unless (fsr-step "connected" (eglot-current-server)) (fsr-finish))
(unless (fsr-step "diagnostics" (fsr-wait 60 (lambda () (fsr-has "resources")))) (fsr-finish))

(goto-char (point-min))
(forward-line (plist-get fsr-config :kernel_line))
(forward-char 10)
(unless (fsr-step "optimize action" (fsr-choose "Optimize `saxpy`")) (fsr-finish))
(unless (fsr-step "verified win" (fsr-wait 120 (lambda () (fsr-has "fsr-win")))) (fsr-finish))
(unless (fsr-step "apply action" (fsr-choose "Apply FSR rewrite")) (fsr-finish))
(fsr-step "buffer holds the rewrite" (save-excursion (goto-char (point-min)) (search-forward "// the emacs winner" nil t)))
(save-buffer)
(fsr-step "written" t)
(fsr-finish)
