//! How many characters of each kind of untrusted field are kept when it is made
//! display-safe (`sanitize_line` / `sanitize_block`): one name per kind of field, so a
//! width says what it is for and every place that shows the same kind keeps the same
//! amount. A width bounds what is kept, not what is drawn: the views fit kept text to the
//! screen. Pure constants; imports nothing.

// Names.

/// A tool's name.
pub const TOOL_NAME: usize = 40;
/// A tool's name in a header line that also names its server.
pub const TOOL_IN_HEADER: usize = 30;
/// A server's name or id in a line of text (a notice, a picker, a form).
pub const SERVER_NAME: usize = 40;
/// A server's name or id in a header line that also names a tool.
pub const SERVER_IN_HEADER: usize = 30;
/// A server's name or id (or a task's) in a view's title.
pub const NAME_IN_TITLE: usize = 60;
/// A server's name kept as a reference (the wire view's server, `:server`, the header's
/// name list): long enough to tell servers apart.
pub const SERVER_REF: usize = 200;
/// The server the board is narrowed to, in the tabs line.
pub const SERVER_IN_TAB_BAR: usize = 20;
/// Who started a task or a call (a proxy's host).
pub const STARTED_BY: usize = 40;
/// An input request's key, or a key of a task's arguments or metadata.
pub const KEY: usize = 30;
/// A JSON-RPC method's name.
pub const METHOD: usize = 40;
/// A JSON-RPC method's name as a view's subject.
pub const METHOD_IN_VIEW: usize = 60;
/// A task's status as the server names it.
pub const STATUS: usize = 16;
/// A task's short id in the table.
pub const SHORT_ID: usize = 8;

// Messages.

/// A task's status message in the table.
pub const STATUS_MESSAGE: usize = 200;
/// Why something failed or stopped (a task's failure, a line of its result, a server
/// disabled or answered elsewhere, a command that failed, a notice).
pub const REASON: usize = 300;
/// An error shown on one line beside what it is about (a form's field, a read that failed,
/// a sign-in).
pub const ERROR_LINE: usize = 200;
/// An input request's message in a list (the inbox).
pub const INPUT_MESSAGE: usize = 200;
/// An input request's message in its own view (a form, the consent view).
pub const PROMPT_MESSAGE: usize = 500;
/// A description or title a server gave (a tool's, a form field's).
pub const DESCRIPTION: usize = 200;
/// The choices a form field allows, joined.
pub const CHOICES: usize = 200;

// Forms.

/// A form field's label.
pub const FIELD_LABEL: usize = 40;
/// A form field's name in an error about it.
pub const FIELD_NAME: usize = 60;
/// A field's format hint.
pub const FORMAT: usize = 12;
/// A task's arguments on one line.
pub const ARGUMENTS: usize = 60;
/// Text typed into a field or a reply, shown back as it is edited.
pub const TYPED: usize = 10_000;

// Links.

/// A link, or its host, as shown to be read.
pub const LINK: usize = 300;
/// A link as the server sent it, before it is checked.
pub const RAW_LINK: usize = 600;
/// A sign-in link (they carry long query strings).
pub const SIGN_IN_LINK: usize = 4000;
/// A link's scheme.
pub const SCHEME: usize = 30;

// Sampling.

/// A message's role.
pub const ROLE: usize = 20;
/// A content block's MIME type or kind, a model's name, a root's name.
pub const LABEL: usize = 40;
/// A model hint or a context setting.
pub const HINT: usize = 30;
/// A server's sampling command.
pub const COMMAND: usize = 60;
/// Lines kept of a sampling message's text.
pub const MESSAGE_LINES: usize = 200;
/// Lines kept of a system prompt.
pub const PROMPT_LINES: usize = 100;
/// Characters kept of a line of a sampling document.
pub const SAMPLING_COLS: usize = 2000;
/// Lines kept of a sampling command's output.
pub const OUTPUT_LINES: usize = 2000;

// The dashboard's own lines.

/// A wire message's title in its document view.
pub const WIRE_TITLE: usize = 80;
/// A filter or search typed in a view.
pub const QUERY: usize = 200;
/// The `:` command line as typed.
pub const COMMAND_LINE: usize = 400;
