await new Promise((resolve) => setTimeout(resolve, 2000));
return 'unreachable';
