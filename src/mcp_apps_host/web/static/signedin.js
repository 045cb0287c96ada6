// The page the authorization server's redirect lands on: it was opened for the sign-in alone,
// so it closes itself once the host has the answer (the console page goes on by itself).
window.setTimeout(() => window.close(), 800);
